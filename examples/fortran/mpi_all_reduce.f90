! The same exact all_reduce checks over MPI_COMM_WORLD of `use mpi` (link libhidet_nccl_mpi).
!   mpifort hidet_nccl.f90 mpi_all_reduce.f90 $(pkg-config --static --libs hidet_nccl_mpi) -o mpi_all_reduce
!   mpirun -np 2 ./mpi_all_reduce
program fortran_mpi_all_reduce
  use, intrinsic :: iso_c_binding
  use mpi
  use hidet_nccl
  use cuda_runtime
  use all_reduce_check
  implicit none
  integer :: ierr, rank, nranks
  integer(c_int) :: comm
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  if (hidet_nccl_mpi_comm_init_fortran(MPI_COMM_WORLD, c_null_ptr, comm) /= HIDET_NCCL_SUCCESS) then
    print '(a)', 'mpi_all_reduce: ' // hidet_nccl_error_message()
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call check_all_reduce(comm, rank, nranks)
  call MPI_Finalize(ierr)
end program
