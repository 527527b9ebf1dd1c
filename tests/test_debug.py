"""Debug mode seen from outside: off by default and free, switched on by TYPED_NN_DEBUG or
``install``, and evaluation errors that name the line that built the failing node.

The checks debug mode makes in-process live in ``test_debug_checks.py``; in the ordinary run
this file runs that one in a ``TYPED_NN_DEBUG=1`` subprocess.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from helpers import t32

import typed_nn as tn
import typed_nn.debug
from typed_nn.ops.declare import implement
from typed_nn.ops.math import EXP
from typed_nn.ops.node import build

ROOT = Path(__file__).resolve().parent.parent
debug_on = typed_nn.debug.is_enabled()
only_off = pytest.mark.skipif(debug_on, reason="measures the switched-off path; debug is on")


def run_python(
    code: str, *, debug: str | None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a clean interpreter, with TYPED_NN_DEBUG set to ``debug`` (or unset)."""
    env = {k: v for k, v in os.environ.items() if k != typed_nn.debug.ENV_VAR}
    if debug is not None:
        env[typed_nn.debug.ENV_VAR] = debug
    env["PYTHONPATH"] = os.pathsep.join([str(cwd), str(ROOT)])
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=False,
    )


def test_import_typed_nn_imports_neither_beartype_nor_jaxtyping_when_off() -> None:
    out = run_python(
        """
        import sys, typed_nn, typed_nn.debug, typed_nn.ops
        print(sorted(m for m in ("beartype", "jaxtyping") if m in sys.modules))
        print(typed_nn.debug.is_enabled())
        """,
        debug=None,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "False"]


@pytest.mark.parametrize("value", [None, "0", ""])
def test_the_switched_off_path_adds_no_wrapper_and_no_check(value: str | None) -> None:
    out = run_python(
        """
        import sys, types, typing
        import typed_nn as tn
        from typed_nn.debug.public import FACADES
        from typed_nn.evaluate import hooks
        problems = []
        for facade in FACADES:
            module = sys.modules.get(facade)
            for name, fn in vars(module or types).items():
                if isinstance(fn, types.FunctionType) and fn.__module__.startswith("typed_nn"):
                    original = getattr(sys.modules[fn.__module__], fn.__name__, None)
                    if original is not fn or hasattr(fn, "__wrapped__"):
                        problems.append(facade + "." + name)
        print(len(problems), problems)
        print(tn.ops.log is sys.modules["typed_nn.ops.math"].log)
        print(hooks.node_checks)
        print(type(tn.Tensor[tn.Float32, tn.CPU, tn.Dim2]) is typing._GenericAlias)
        print(type(tn.Matrix[tn.Float32, tn.CPU]) is typing._GenericAlias)
        """,
        debug=value,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["0 []", "True", "[]", "True", "True"]


def test_typed_nn_debug_1_turns_every_check_on_at_import() -> None:
    out = run_python(
        """
        import sys, typing
        import typed_nn as tn
        from typed_nn.evaluate import hooks
        print(tn.debug.is_enabled(), "beartype" in sys.modules)
        print(tn.ops.log.__wrapped__ is sys.modules["typed_nn.ops.math"].log)
        print(tn.tensor.__wrapped__ is sys.modules["typed_nn.data.factories"].tensor)
        print([check.__name__ for check in hooks.node_checks])
        print(typing.get_args(tn.Matrix[tn.Float32, tn.CPU]) == (tn.Float32, tn.CPU, tn.Dim2))
        """,
        debug="1",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "True True",
        "True",
        "True",
        "['check_finite', 'check_int_overflow', 'check_int_cast']",
        "True",
    ]


def test_typed_nn_debug_1_without_the_debug_extra_names_it_at_import() -> None:
    """Not a ModuleNotFoundError from deep inside the package: the extra and its command."""
    out = run_python(
        """
        import sys
        sys.modules["beartype"] = None  # not installed
        import typed_nn
        """,
        debug="1",
    )
    assert out.returncode == 1
    assert "ModuleNotFoundError" not in out.stderr
    assert out.stderr.strip().endswith(
        "typed_nn.errors.MissingDependencyError: debug mode (TYPED_NN_DEBUG=1) needs beartype, "
        "which is not installed.\nhint: install the debug extra: pip install 'typed_nn[debug]'"
    )


@only_off
def test_debug_mode_and_install_without_the_debug_extra_name_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "beartype", None)  # not installed
        with pytest.raises(
            tn.MissingDependencyError,
            match=r"^debug mode needs beartype, which is not installed\.\n"
            r"hint: install the debug extra: pip install 'typed_nn\[debug\]'$",
        ):
            typed_nn.debug.enable()
    monkeypatch.setitem(sys.modules, "jaxtyping", None)
    with pytest.raises(
        tn.MissingDependencyError,
        match=r"^typed_nn\.debug\.install needs jaxtyping, which is not installed\.\n"
        r"hint: install the debug extra: pip install 'typed_nn\[debug\]'$",
    ):
        typed_nn.debug.install("some_package")
    assert not typed_nn.debug.is_enabled()  # nothing was turned on


def test_debug_mode_leaves_the_global_random_generator_alone() -> None:
    # beartype samples container items randomly; a user's seeded `random` must not notice.
    code = """
        import random
        import typed_nn as tn
        random.seed(7)
        x = tn.zeros((2,), tn.Float32, tn.CPU)
        for _ in range(20):
            tn.ops.stack([x, x, x])
        print(random.random())
        """
    on, off = run_python(code, debug="1"), run_python(code, debug=None)
    assert on.returncode == 0, on.stderr
    assert on.stdout == off.stdout


def test_install_checks_a_user_package_and_turns_debug_mode_on(tmp_path: Path) -> None:
    package = tmp_path / "user_model"
    package.mkdir()
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """
            from __future__ import annotations
            import typed_nn as tn

            def first_row(x: tn.Matrix[tn.Float32, tn.CPU]) -> tn.Vector[tn.Float32, tn.CPU]:
                return x[0]
            """
        )
    )
    out = run_python(
        """
        from typing import Any
        import typed_nn.debug
        typed_nn.debug.install("user_model", shapes=False)
        import typed_nn as tn
        import user_model
        print(typed_nn.debug.is_enabled(), user_model.first_row(tn.zeros((2, 3), tn.Float32, tn.CPU)))
        x: Any = tn.zeros((2, 3), tn.Float64, tn.CPU)
        user_model.first_row(x)
        """,
        debug=None,
        cwd=tmp_path,
    )
    assert out.stdout.splitlines() == ["True Tensor[Float32, CPU, Dim1](3)"]
    assert out.returncode == 1
    assert (
        "BeartypeCallHintParamViolation: Function user_model.first_row() parameter x=" in out.stderr
    )
    expected = 'not instance of <class "typed_nn.data.tensor.TensorLike[Float32, CPU, Dim2]">'
    assert expected in out.stderr


@pytest.mark.skipif(debug_on, reason="debug is on: test_debug_checks.py runs in this session")
def test_the_debug_checks_pass_in_a_typed_nn_debug_subprocess() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_debug_checks.py",
            "tests/test_debug_generic.py",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, typed_nn.debug.ENV_VAR: "1"},
        cwd=ROOT,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-4000:]
    assert " passed" in out.stdout
    assert "skipped" not in out.stdout


# --- errors found only at evaluation name the build site, debug mode or not ---

# "general", not "elementwise": a fused region would not call this implementation alone;
# internal: a test's op stays out of the catalogue that the autodiff tests walk.
FAILING = dataclasses.replace(
    EXP, name="debug_test_failing", kind="general", internal=True, ufunc=None, cuda=None
)


@implement(FAILING, tn.CPU)
def _failing(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    raise ZeroDivisionError("backend gave up")


def test_a_backend_failure_names_the_op_and_the_line_that_built_the_node() -> None:
    x = t32([[1.0, 2.0]])
    line = sys._getframe().f_lineno + 1
    node = build(FAILING, (x,))
    y = node + 1.0
    with pytest.raises(
        tn.EvaluationError,
        match=rf"(?s)evaluating debug_test_failing failed: ZeroDivisionError: backend gave up"
        rf".*built at\s+: test_debug\.py:{line}\n",
    ):
        tn.evaluate(y)


@only_off
def test_a_nan_passes_silently_when_debug_mode_is_off() -> None:
    x = t32([-1.0, 4.0])
    values = tn.ops.log(x).numpy()
    assert np.isnan(values[0])
    assert values[1] == pytest.approx(np.log(4.0))
