from pixrecon.cli import main

main()
