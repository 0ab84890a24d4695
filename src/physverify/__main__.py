from physverify.cli import main

raise SystemExit(main())
