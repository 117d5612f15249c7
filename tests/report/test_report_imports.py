"""A settings-only ``rerokit report`` stays light: no torch, no matplotlib, no scipy.stats (the
measured wall time is in benchmarks/report_speed.py, against ``bound dpsgd`` in the same run).
With ``--data-shape`` the uninformed section's no-prior attacks (bounds.uninformed_scope) load
scipy.stats."""

from __future__ import annotations

import subprocess
import sys


def test_settings_only_report_imports_no_torch_matplotlib_or_scipy_stats():
    code = ("import io, contextlib, sys\n"
            "from rerokit.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            "    rc = main(['report', '--noise-multiplier', '1', '--sample-rate', '0.01', '--steps', '1000'])\n"
            "assert rc == 0 and 'Level:' in out.getvalue()\n"
            "print(sorted(m for m in ('torch', 'opacus', 'matplotlib', 'scipy.stats') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
