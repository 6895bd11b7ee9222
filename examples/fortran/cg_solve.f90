! A distributed conjugate-gradient solve of the 1-D Poisson equation (-u'' = 1, Dirichlet
! boundary, N points), the points split in blocks across ranks, as examples/cg_solve.c does in
! 2-D: every global reduction (the two dot products of each iteration, the exchange of block
! ends with the neighbours, the final gathering of x) is an all_reduce of real(8) on the GPU.
! Each rank then solves the whole problem alone and checks that both solutions agree.
!   hidet-nccl-run -n 2 ./cg_solve
program fortran_cg_solve
  use, intrinsic :: iso_c_binding
  use hidet_nccl
  use cuda_runtime
  implicit none
  integer, parameter :: n = 2000
  integer(c_int) :: comm, rank, nranks
  integer :: first, last, iters
  real(c_double), allocatable :: x(:), whole(:), alone(:)
  real(c_double) :: worst
  if (hidet_nccl_init(comm) /= HIDET_NCCL_SUCCESS) then
    print '(a)', 'cg_solve: ' // hidet_nccl_error_message()
    stop 1
  end if
  if (hidet_nccl_comm_rank(comm, rank) /= 0 .or. hidet_nccl_comm_size(comm, nranks) /= 0) stop 1
  first = rank * n / nranks + 1        ! this rank's points: first .. last
  last = (rank + 1) * n / nranks
  allocate(x(first:last), whole(n), alone(n))
  call cg(first, last, x, iters, .true.)
  whole = 0
  whole(first:last) = x
  call sum_over_ranks(whole)           ! everyone's block: the whole solution
  call cg(1, n, alone, iters, .false.) ! the same problem in this process alone
  worst = maxval(abs(whole - alone))
  print '(a,i0,a,i0,a,i0,a,es9.2)', 'rank ', rank, ' of ', nranks, ': converged in ', iters, &
    ' iterations; largest difference from the one-process solve ', worst
  if (hidet_nccl_finalize() /= HIDET_NCCL_SUCCESS) stop 1
  if (worst > 1e-9_c_double * maxval(abs(alone))) stop 1

contains

  ! CG on points lo .. hi of A = tridiag(-1, 2, -1), b = 1; shared: the other ranks hold the rest.
  subroutine cg(lo, hi, x, iters, shared)
    integer, intent(in) :: lo, hi
    real(c_double), intent(out) :: x(lo:hi)
    integer, intent(out) :: iters
    logical, intent(in) :: shared
    real(c_double) :: r(lo:hi), p(lo:hi), ap(lo:hi), rr, rr_new, alpha
    x = 0
    r = 1
    p = r
    rr = dot(r, r, shared)
    do iters = 1, 2 * n
      call apply(lo, hi, p, ap, shared)
      alpha = rr / dot(p, ap, shared)
      x = x + alpha * p
      r = r - alpha * ap
      rr_new = dot(r, r, shared)
      if (sqrt(rr_new) < 1e-10_c_double) exit
      p = r + (rr_new / rr) * p
      rr = rr_new
    end do
  end subroutine

  ! ap = A p; the neighbours' block ends come through one all_reduce of a zeroed table.
  subroutine apply(lo, hi, p, ap, shared)
    integer, intent(in) :: lo, hi
    real(c_double), intent(in) :: p(lo:hi)
    real(c_double), intent(out) :: ap(lo:hi)
    logical, intent(in) :: shared
    real(c_double) :: ends(0:n + 1), left, right
    integer :: i
    ends = 0
    ends(lo) = p(lo)
    ends(hi) = p(hi)
    if (shared) call sum_over_ranks(ends)
    left = ends(lo - 1)    ! 0 at the boundary
    right = ends(hi + 1)
    do i = lo, hi
      ap(i) = 2 * p(i)
      if (i > lo) ap(i) = ap(i) - p(i - 1)
      if (i == lo) ap(i) = ap(i) - left
      if (i < hi) ap(i) = ap(i) - p(i + 1)
      if (i == hi) ap(i) = ap(i) - right
    end do
  end subroutine

  real(c_double) function dot(a, b, shared)
    real(c_double), intent(in) :: a(:), b(:)
    logical, intent(in) :: shared
    real(c_double) :: s(1)
    s(1) = sum(a * b)
    if (shared) call sum_over_ranks(s)
    dot = s(1)
  end function

  ! In-place real(8) sum over the ranks of v, through the GPU.
  subroutine sum_over_ranks(v)
    real(c_double), intent(inout), target :: v(:)
    type(c_ptr) :: dev
    integer(c_size_t) :: bytes
    bytes = size(v, kind=c_size_t) * 8
    if (cudaMalloc(dev, bytes) /= 0) stop 'cudaMalloc failed'
    if (cudaMemcpy(dev, c_loc(v), bytes, cudaMemcpyHostToDevice) /= 0) stop 'cudaMemcpy failed'
    if (hidet_nccl_all_reduce(comm, dev, dev, size(v, kind=c_size_t), HIDET_NCCL_REAL8, HIDET_NCCL_SUM, &
                              c_null_ptr) /= 0) then
      print '(a)', hidet_nccl_error_message()
      stop 1
    end if
    if (cudaDeviceSynchronize() /= 0) stop 'cudaDeviceSynchronize failed'
    if (cudaMemcpy(c_loc(v), dev, bytes, cudaMemcpyDeviceToHost) /= 0) stop 'cudaMemcpy failed'
    if (cudaFree(dev) /= 0) stop 'cudaFree failed'
  end subroutine
end program
