from readmany_daemon.cli import main

raise SystemExit(main())
