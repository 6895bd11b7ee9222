! all_reduce of complex(8), real(8) and integer(4) arrays from Fortran, checked exactly against
! what one process computes. One rank per GPU, started by hidet-nccl-run (or srun, torchrun, a
! PMIx mpirun); the MPI variant is mpi_all_reduce.f90.
!   gfortran hidet_nccl.f90 all_reduce.f90 $(pkg-config --static --libs hidet_nccl) -o all_reduce
!   hidet-nccl-run -n 2 ./all_reduce
program fortran_all_reduce
  use, intrinsic :: iso_c_binding
  use hidet_nccl
  use cuda_runtime
  use all_reduce_check
  implicit none
  integer(c_int) :: comm, rank, nranks
  if (hidet_nccl_init(comm) /= HIDET_NCCL_SUCCESS) then
    print '(a)', 'all_reduce: ' // hidet_nccl_error_message()
    stop 1
  end if
  if (hidet_nccl_comm_rank(comm, rank) /= 0 .or. hidet_nccl_comm_size(comm, nranks) /= 0) stop 1
  call check_all_reduce(comm, rank, nranks)
end program
