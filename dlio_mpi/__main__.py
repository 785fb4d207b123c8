from dlio_mpi.cli import main

if __name__ == "__main__":
    main()
