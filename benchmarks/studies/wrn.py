"""Wide Residual Network (Zagoruyko & Komodakis, 2016) for 32x32 images.

WRN-28-2 by default, the network of the LLP-VAT paper's image experiments, with
the pre-activation blocks of the authors' reference implementation (see
``benchmarks/README.md``, section ``studies/wrn.py``).
"""

import torch
from torch import nn
from torch.nn import functional as F


class _Block(nn.Module):
    def __init__(self, in_channels, out_channels, stride, dropout):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_channels)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.dropout = dropout
        self.shortcut = None
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Conv2d(in_channels, out_channels, 1, stride, bias=False)

    def forward(self, x):
        activated = F.relu(self.bn1(x))
        out = F.relu(self.bn2(self.conv1(activated)))
        if self.dropout:
            out = F.dropout(out, p=self.dropout, training=self.training)
        out = self.conv2(out)
        # the projection shortcut sees the pre-activated input, as in the paper's code
        return out + (x if self.shortcut is None else self.shortcut(activated))


class WideResNet(nn.Module):
    """WRN-``depth``-``widen_factor`` mapping ``(n, in_channels, 32, 32)`` to logits.

    ``depth - 4`` must be a positive multiple of 6 (three groups of
    ``(depth - 4) / 6`` blocks of ``16k, 32k, 64k`` channels, ``k =
    widen_factor``). ``LLPClassifier(module=WideResNet)`` fills in ``n_classes``.

    >>> net = WideResNet(n_classes=10, depth=10, widen_factor=1)
    >>> net(torch.zeros(2, 3, 32, 32)).shape
    torch.Size([2, 10])
    """

    def __init__(self, n_classes, depth=28, widen_factor=2, dropout=0.0, in_channels=3):
        super().__init__()
        if depth < 10 or (depth - 4) % 6:
            raise ValueError(
                f"depth - 4 must be a positive multiple of 6; got {depth}."
            )
        n_blocks = (depth - 4) // 6
        widths = [16, 16 * widen_factor, 32 * widen_factor, 64 * widen_factor]
        self.conv = nn.Conv2d(in_channels, widths[0], 3, 1, 1, bias=False)
        groups = []
        for g, stride in enumerate((1, 2, 2)):
            blocks = [_Block(widths[g], widths[g + 1], stride, dropout)]
            blocks += [
                _Block(widths[g + 1], widths[g + 1], 1, dropout)
                for _ in range(n_blocks - 1)
            ]
            groups.append(nn.Sequential(*blocks))
        self.groups = nn.Sequential(*groups)
        self.bn = nn.BatchNorm2d(widths[3])
        self.fc = nn.Linear(widths[3], n_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, x):
        out = F.relu(self.bn(self.groups(self.conv(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(out, 1), 1))
