"""dlio_mpi: an MPI-native emulator of the I/O that scientific deep-learning training does.

Importing the package does not initialize MPI; the engines (dlio_mpi.engines) do."""
__version__ = "0.1.0"
