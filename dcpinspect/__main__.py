from dcpinspect.cli import main  # absolute: spark-submit runs this file by its path

main()
