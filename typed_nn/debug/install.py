"""``install(package)``: debug mode's checks on a user's package (beartype claw, jaxtyping).

Call it before the package is first imported. Every function and method of the package is
then checked by beartype on each call (annotated locals too), against the tagged types that
debug mode makes checkable (``Matrix[Float32, CPU]`` compares element, device and rank). With
``shapes=True`` (the default) jaxtyping's import hook is installed instead, with beartype as
its checker: annotations such as ``Float[Tensor, "batch n_in"]`` then also bind each named
size once per call, so two arguments that disagree on ``batch`` are an error. (jaxtyping's
hook checks arguments and results, not annotated locals; ``shapes=False`` gives beartype's.)

typed_nn data works as a jaxtyping array type: it has ``.shape`` and ``.dtype`` (the numpy
dtype of its element tag), so ``Float[Matrix[Float32, CPU], "n m"]`` and ``Float32[Tensor,
"n"]`` are checked like numpy arrays. jaxtyping keeps only the class of the array type
(``TensorLike``): inside its annotations the element is checked through the dtype
(``Float32[...]`` pins it; ``Float[...]`` accepts any float) and the rank through the shape
string, the device not at all. Plain tagged annotations are checked by all three tags.
"""

from __future__ import annotations

from ..errors import OperandError, message
from .switch import enable, require

__all__ = ["install"]


def install(package: str, *, shapes: bool = True) -> None:
    """Check every function of ``package`` (a top-level or dotted name) at run time.

    Args:
        package: the package (or module) to check, e.g. ``"my_model"``; not yet imported.
        shapes: also check jaxtyping shape strings consistently across each call's arguments.

    Turns debug mode on for typed_nn too (:func:`typed_nn.debug.enable`).

    >>> install("my_model")  # doctest: +SKIP
    >>> import my_model      # its functions are now checked
    """
    given: tuple[object, object] = (package, shapes)  # callers may pass anything
    if not (isinstance(given[0], str) and given[0] and isinstance(given[1], bool)):
        raise OperandError(
            message(
                "typed_nn.debug.install needs a package name and shapes=True or False.",
                [("package", repr(package)[:80]), ("shapes", repr(shapes)[:80])],
                hint='e.g. install("my_model"), before the package is imported.',
            )
        )
    require("beartype", *(("jaxtyping",) if shapes else ()), feature="typed_nn.debug.install")
    enable()
    if shapes:
        from jaxtyping import install_import_hook

        install_import_hook(package, "typed_nn.debug.checker.beartype_tagged")
    else:
        from beartype.claw import beartype_package

        from .checker import CONF

        beartype_package(package, conf=CONF)
