from pixrecon.entry import main

main()
