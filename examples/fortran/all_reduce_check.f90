! The checks both Fortran examples run: an in-place sum of complex(8), real(8) and integer(4)
! arrays over every rank, compared exactly with the sum one process computes.
module all_reduce_check
  use, intrinsic :: iso_c_binding
  use hidet_nccl
  use cuda_runtime
  implicit none
  integer, parameter :: n = 100003
contains
  subroutine check_all_reduce(comm, rank, nranks)
    integer(c_int), intent(in) :: comm
    integer, intent(in) :: rank, nranks
    complex(c_double_complex), allocatable, target :: z(:), zsum(:)
    real(c_double), allocatable, target :: x(:), xsum(:)
    integer(c_int), allocatable, target :: k(:), ksum(:)
    integer :: i, r, wrong
    allocate(z(n), zsum(n), x(n), xsum(n), k(n), ksum(n))
    wrong = 0
    zsum = (0.0_c_double, 0.0_c_double)
    xsum = 0.0_c_double
    ksum = 0
    do r = 0, nranks - 1 ! what every rank holds, and the exact sums
      do i = 1, n
        zsum(i) = zsum(i) + cmplx(r + mod(i, 7), -r - mod(i, 5), c_double_complex)
        xsum(i) = xsum(i) + real(r * 3 + mod(i, 11), c_double) * 0.5_c_double
        ksum(i) = ksum(i) + (r + 1) * mod(i, 13) - r
      end do
    end do
    do i = 1, n
      z(i) = cmplx(rank + mod(i, 7), -rank - mod(i, 5), c_double_complex)
      x(i) = real(rank * 3 + mod(i, 11), c_double) * 0.5_c_double
      k(i) = (rank + 1) * mod(i, 13) - rank
    end do
    call sum_on_gpu(comm, c_loc(z), int(n, c_size_t) * 16_c_size_t, HIDET_NCCL_COMPLEX16)
    call sum_on_gpu(comm, c_loc(x), int(n, c_size_t) * 8_c_size_t, HIDET_NCCL_REAL8)
    call sum_on_gpu(comm, c_loc(k), int(n, c_size_t) * 4_c_size_t, HIDET_NCCL_INTEGER4)
    wrong = count(z /= zsum) + count(x /= xsum) + count(k /= ksum)
    print '(a,i0,a,i0,a,i0,a)', 'rank ', rank, ' of ', nranks, ': 3 arrays checked, ', wrong, ' elements wrong'
    if (hidet_nccl_finalize() /= HIDET_NCCL_SUCCESS) print '(a)', hidet_nccl_error_message()
    if (wrong /= 0) stop 1
  end subroutine

  ! host(bytes) -> device, in-place sum over the ranks, back to host.
  subroutine sum_on_gpu(comm, host, bytes, dtype)
    integer(c_int), intent(in) :: comm, dtype
    type(c_ptr), intent(in) :: host
    integer(c_size_t), intent(in) :: bytes
    type(c_ptr) :: dev
    integer(c_size_t) :: elem
    if (cudaMalloc(dev, bytes) /= 0) stop 'cudaMalloc failed'
    if (cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice) /= 0) stop 'cudaMemcpy failed'
    if (hidet_nccl_dtype_size(dtype, elem) /= 0) stop 'dtype_size failed'
    if (hidet_nccl_all_reduce(comm, dev, dev, bytes / elem, dtype, HIDET_NCCL_SUM, c_null_ptr) /= 0) then
      print '(a)', hidet_nccl_error_message()
      stop 1
    end if
    if (cudaDeviceSynchronize() /= 0) stop 'cudaDeviceSynchronize failed'
    if (cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost) /= 0) stop 'cudaMemcpy failed'
    if (cudaFree(dev) /= 0) stop 'cudaFree failed'
  end subroutine
end module all_reduce_check
