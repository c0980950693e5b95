"""Wide Residual Network (Zagoruyko & Komodakis, 2016) for 32x32 images.

WRN-28-2 by default, the network of the LLP-VAT paper's image experiments
(pre-activation blocks, as in the authors' reference implementation); the
architecture is described in ``benchmarks/README.md``, section
``studies/wrn.py``.
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
        out = self.conv1(activated)
        out = F.relu(self.bn2(out))
        if self.dropout:
            out = F.dropout(out, p=self.dropout, training=self.training)
        out = self.conv2(out)
        return out + (x if self.shortcut is None else self.shortcut(activated))


class WideResNet(nn.Module):
    """WRN-``depth``-``widen_factor`` mapping ``(n, C, 32, 32)`` images to logits.

    ``LLPClassifier(module=WideResNet)`` fills in ``n_classes`` from the
    data; set the rest with ``module__depth=...`` etc.

    Parameters
    ----------
    n_classes : int
        Number of output logits.
    depth : int, default=28
        Total depth; ``depth - 4`` must be a multiple of 6 (10, 16, 22, 28,
        40...). Each of the three groups holds ``(depth - 4) / 6`` blocks.
    widen_factor : int, default=2
        Channel multiplier ``k``: the groups have ``16k, 32k, 64k`` channels.
    dropout : float, default=0.0
        Dropout probability between the two convolutions of every block.
    in_channels : int, default=3
        Channels of the input images.

    Examples
    --------
    >>> import torch
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
            blocks = [
                _Block(
                    widths[g] if i == 0 else widths[g + 1],
                    widths[g + 1],
                    stride if i == 0 else 1,
                    dropout,
                )
                for i in range(n_blocks)
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
        out = self.groups(self.conv(x))
        out = F.relu(self.bn(out))
        out = torch.flatten(F.adaptive_avg_pool2d(out, 1), 1)
        return self.fc(out)
