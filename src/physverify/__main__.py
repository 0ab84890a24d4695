from physverify.cli import command

raise SystemExit(command())
