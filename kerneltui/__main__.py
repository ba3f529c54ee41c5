from kerneltui.cli import main

raise SystemExit(main())
