from mmnp.cli import app

app(prog_name="mmnp")
