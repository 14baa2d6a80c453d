"""Parameters annotated as a diffusion pipeline (TPF206's evaluation loops).

``def log_samples(self, pipeline: DiffusionPipeline, ...)``, then ``pipeline(prompt=p)`` in
a loop over prompts: the annotation says what the caller hands in even when the pipeline
itself is built where the value engine cannot follow (``instantiate_from_config(cfg)``).
Calling a diffusers pipeline generates one request's output, and the library runs its
``__call__`` under ``torch.no_grad()``: a forward with autograd off.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, FrozenSet, Sequence

import libcst as cst

if TYPE_CHECKING:
    from ...context import FileContext

_PIPELINE = re.compile(r"^diffusers\.(?:\w+\.)*\w*Pipeline$")


def pipeline_parameters(context: "FileContext", ancestors: Sequence[cst.CSTNode]) -> FrozenSet[str]:
    """The parameters of the function around the node annotated with a diffusers pipeline
    class (``pipe: StableDiffusionPipeline``, ``Optional[...]`` not: it may be None)."""
    function = next((a for a in reversed(ancestors) if type(a) is cst.FunctionDef), None)
    if function is None:
        return frozenset()
    params = function.params
    found = set()
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        annotation = param.annotation.annotation if param.annotation is not None else None
        if type(annotation) in (cst.Name, cst.Attribute) and _PIPELINE.match(context.qualname(annotation) or ""):
            found.add(param.name.value)
    return frozenset(found)
