"""Which layer classes and library model names are convolutional: the words both the file's
model facts (``conv_models``) and the project's (``project_models``) read, kept apart so neither
imports the other."""

from __future__ import annotations

CONV_LAYERS = frozenset(
    f"torch.nn.{prefix}{kind}{dims}d"
    for prefix in ("", "Lazy")
    for kind in ("Conv", "ConvTranspose")
    for dims in (1, 2, 3)
)
# torchvision.models builders and classes (lower-cased) that are convolutional networks.
TORCHVISION_CONV = (
    "resnet", "resnext", "wide_resnet", "vgg", "alexnet", "densenet", "mobilenet",
    "efficientnet", "regnet", "shufflenet", "squeezenet", "mnasnet", "googlenet", "inception",
    "convnext", "maxvit", "fasterrcnn", "maskrcnn", "keypointrcnn", "retinanet", "ssd", "fcos",
    "fcn", "deeplabv3", "lraspp", "r3d", "mc3", "r2plus1d", "s3d", "videoresnet", "raft",
)
