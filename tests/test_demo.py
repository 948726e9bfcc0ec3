"""The `skdpsynth demo` command runs end to end and writes its report."""

from skdpsynth.cli import main


def test_demo_writes_report(tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["demo", "--output", str(out), "--n-students", "600", "--epsilon", "5"]) == 0
    printed = capsys.readouterr().out
    assert "PEARL audit" in printed and "verdict:" in printed
    assert (out / "synthetic.csv").exists() and (out / "ledger.jsonl").exists()
    assert (out / "marginals.png").stat().st_size > 1000
    assert any(p.suffix in (".md", ".html") for p in out.iterdir())
