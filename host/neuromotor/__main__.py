from neuromotor.cli import main

raise SystemExit(main())
