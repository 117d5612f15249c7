import math

import pytest

from rerokit._validate import check_int, check_positive, check_probability
from rerokit.stats import clopper_pearson


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_positive_rejects(bad):
    with pytest.raises(ValueError, match="sigma must be a finite number"):
        check_positive("sigma", bad)


def test_probability_and_int():
    assert check_probability("q", 1.0) == 1.0
    with pytest.raises(ValueError, match=r"q must be a number in \(0, 1\]"):
        check_probability("q", 0.0)
    with pytest.raises(ValueError, match="steps must be an integer >= 1"):
        check_int("steps", 0, minimum=1)
    with pytest.raises(TypeError):
        check_int("steps", 1.5)


def test_clopper_pearson_known_values():
    # Reference: scipy.stats.binomtest(5, 10).proportion_ci(method="exact") = (0.18709, 0.81291)
    lo, hi = clopper_pearson(5, 10)
    assert abs(lo - 0.187086) < 1e-5 and abs(hi - 0.812914) < 1e-5
    assert clopper_pearson(0, 10)[0] == 0.0 and clopper_pearson(10, 10)[1] == 1.0


def test_check_instance_names_the_parameter_and_the_type():
    from rerokit._validate import check_instance
    from rerokit.bounds.options import Numerics

    n = Numerics()
    assert check_instance("numerics", n, Numerics) is n
    assert isinstance(check_instance("numerics", None, Numerics, Numerics), Numerics)  # the documented default
    with pytest.raises(TypeError, match=r"^numerics must be a Numerics, got dict$"):
        check_instance("numerics", {}, Numerics)
    with pytest.raises(TypeError, match=r"^numerics must be a Numerics, got NoneType$"):
        check_instance("numerics", None, Numerics)  # None is refused where there is no default

    class MLPSpec:  # acronyms take the article of their first letter's name
        pass

    class EngineOptions:
        pass

    class DPSGDSettings:
        pass

    for cls, article in ((MLPSpec, "an"), (EngineOptions, "an"), (DPSGDSettings, "a")):
        with pytest.raises(TypeError, match=rf"^x must be {article} {cls.__name__}, got int$"):
            check_instance("x", 1, cls)
