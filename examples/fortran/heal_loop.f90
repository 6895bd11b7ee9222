! A loop that survives the death of a rank and comes back whole, in Fortran: hidet_nccl_comm_heal
! and hidet_nccl_comm_joined (examples/cg_heal.c tells the whole story, with checkpoints):
!   gfortran -c hidet_nccl.f90 cuda_runtime.f90
!   gfortran heal_loop.f90 hidet_nccl.o cuda_runtime.o $(pkg-config --static --libs hidet_nccl) -o heal_loop
!   hidet-nccl-run -n 3 --max-restarts 2 ./heal_loop
! Each step adds the sum over ranks of (rank + 1) * step, an all_reduce of real(8), to a total every
! rank holds. Rank 1 kills itself at step 20 in its first life (HIDET_NCCL_RESTART_COUNT unset or
! 0): the others' collective fails (detect), they heal, and the restarted rank's hidet_nccl_init is
! its side of that heal. The state is the same on every rank, so catching up is one broadcast, from
! the member at the earliest step (a member a step ahead goes back one step; the new rank has none).
program fortran_heal_loop
  use, intrinsic :: iso_c_binding
  use hidet_nccl
  use cuda_runtime
  implicit none
  interface
    integer(c_int) function c_raise(sig) bind(c, name="raise")
      import
      integer(c_int), value :: sig
    end function
  end interface
  integer, parameter :: steps = 100, max_ranks = 64
  integer(c_int), parameter :: sigkill = 9
  real(c_double), parameter :: wait_s = 60, heal_s = 240  ! a collective's deadline; a heal's
  integer(c_int) :: comm, rank, nranks, st, n_joined, joined(max_ranks)
  integer :: step
  real(c_double), target :: total, buf(max_ranks)
  real(c_double) :: expected
  type(c_ptr) :: dev, dev_one
  character(len=16) :: restarts
  logical :: first_life

  call get_environment_variable('HIDET_NCCL_RESTART_COUNT', restarts)
  first_life = len_trim(restarts) == 0 .or. trim(restarts) == '0'
  if (hidet_nccl_init(comm) /= HIDET_NCCL_SUCCESS) call fail('hidet_nccl_init')
  if (hidet_nccl_comm_rank(comm, rank) /= 0 .or. hidet_nccl_comm_size(comm, nranks) /= 0) call fail('comm_rank')
  if (nranks > max_ranks) stop 'heal_loop: more than 64 ranks'
  if (cudaMalloc(dev, int(8 * max_ranks, c_size_t)) /= 0 .or. cudaMalloc(dev_one, 8_c_size_t) /= 0) &
    stop 'heal_loop: cudaMalloc failed'
  if (hidet_nccl_comm_joined(comm, joined, n_joined) /= 0) call fail('hidet_nccl_comm_joined')
  step = 0
  total = 0
  st = HIDET_NCCL_SUCCESS
  if (n_joined > 0) then  ! this process was restarted, and its init took it in: no state yet
    step = -1
    st = catch_up()
  end if
  do
    if (st == HIDET_NCCL_SUCCESS) st = run()  ! detect: the first failure comes back here
    if (st == HIDET_NCCL_SUCCESS) exit
    print '(a,i0,a,i0,a)', 'heal_loop: rank ', rank, ': step ', step, ': ' // hidet_nccl_error_message()
    call heal()
    st = catch_up()
  end do
  expected = real(steps, c_double) * (steps + 1) / 2 * nranks * (nranks + 1) / 2
  print '(a,i0,a,i0,a,f0.1,a)', 'heal_loop: rank ', rank, ' of ', nranks, ': total ', total, &
    merge(' OK   ', ' WRONG', total == expected)
  if (cudaFree(dev) /= 0 .or. cudaFree(dev_one) /= 0) stop 'heal_loop: cudaFree failed'
  if (hidet_nccl_finalize() /= HIDET_NCCL_SUCCESS) call fail('hidet_nccl_finalize')
  if (total /= expected) stop 1

contains

  subroutine fail(what)
    character(len=*), intent(in) :: what
    print '(a)', 'heal_loop: ' // what // ': ' // hidet_nccl_error_message()
    stop 1
  end subroutine

  ! The steps left; a failure returns its status at once.
  integer(c_int) function run() result(st)
    do while (step < steps)
      if (first_life .and. rank == 1 .and. step == 20) then
        print '(a)', 'heal_loop: rank 1: SIGKILL to itself at step 20'
        flush(6)
        st = c_raise(sigkill)
      end if
      buf(1) = real((rank + 1) * (step + 1), c_double)
      if (cudaMemcpy(dev, c_loc(buf), 8_c_size_t, cudaMemcpyHostToDevice) /= 0) stop 'heal_loop: cudaMemcpy failed'
      st = hidet_nccl_all_reduce(comm, dev, dev, 1_c_size_t, HIDET_NCCL_REAL8, HIDET_NCCL_SUM, c_null_ptr)
      if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl_comm_wait(comm, c_null_ptr, wait_s)  ! before any copy back
      if (st /= HIDET_NCCL_SUCCESS) return
      if (cudaMemcpy(c_loc(buf), dev, 8_c_size_t, cudaMemcpyDeviceToHost) /= 0) stop 'heal_loop: cudaMemcpy failed'
      total = total + buf(1)  ! the step and the total move together
      step = step + 1
    end do
    st = HIDET_NCCL_SUCCESS
  end function

  ! The survivors and the restarted rank make one communicator of the whole job again.
  subroutine heal()
    integer(c_int) :: old, healed, taken, new_rank, new_size
    old = comm
    if (hidet_nccl_comm_heal(old, heal_s, healed, taken) /= HIDET_NCCL_SUCCESS) call fail('hidet_nccl_comm_heal')
    if (healed /= old) then  ! the old one stays failed until destroyed
      if (hidet_nccl_comm_destroy(old) /= HIDET_NCCL_SUCCESS) call fail('hidet_nccl_comm_destroy')
    end if
    if (cudaDeviceSynchronize() /= 0) stop 'heal_loop: cudaDeviceSynchronize failed'
    comm = healed
    if (hidet_nccl_comm_rank(comm, new_rank) /= 0 .or. hidet_nccl_comm_size(comm, new_size) /= 0) call fail('comm_rank')
    if (new_rank /= rank .or. new_size /= nranks) stop 'heal_loop: the job is not whole after the heal'
    print '(a,i0,a,i0,a)', 'heal_loop: rank ', rank, ': healed, ', taken, ' taken in'
  end subroutine

  ! Who is new (hidet_nccl_comm_joined), each rank's step (an all_gather), then (step, total) from
  ! the member at the earliest step to every rank.
  integer(c_int) function catch_up() result(st)
    integer :: r, root
    st = hidet_nccl_comm_joined(comm, joined, n_joined)
    if (st /= HIDET_NCCL_SUCCESS) return
    buf(1) = merge(-1.0_c_double, real(step, c_double), joined(rank + 1) /= 0)
    if (cudaMemcpy(dev_one, c_loc(buf), 8_c_size_t, cudaMemcpyHostToDevice) /= 0) stop 'heal_loop: cudaMemcpy failed'
    st = hidet_nccl_all_gather(comm, dev_one, dev, 1_c_size_t, HIDET_NCCL_REAL8, c_null_ptr)
    if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl_comm_wait(comm, c_null_ptr, wait_s)
    if (st /= HIDET_NCCL_SUCCESS) return
    if (cudaMemcpy(c_loc(buf), dev, int(8 * nranks, c_size_t), cudaMemcpyDeviceToHost) /= 0) &
      stop 'heal_loop: cudaMemcpy failed'
    root = -1
    do r = 0, nranks - 1
      if (joined(r + 1) == 0 .and. buf(r + 1) >= 0) then
        if (root < 0) then
          root = r
        else if (buf(r + 1) < buf(root + 1)) then
          root = r
        end if
      end if
    end do
    if (root < 0) stop 'heal_loop: no rank kept the state'
    buf(1) = real(step, c_double)
    buf(2) = total
    if (cudaMemcpy(dev, c_loc(buf), 16_c_size_t, cudaMemcpyHostToDevice) /= 0) stop 'heal_loop: cudaMemcpy failed'
    st = hidet_nccl_broadcast(comm, dev, dev, 2_c_size_t, HIDET_NCCL_REAL8, root, c_null_ptr)
    if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl_comm_wait(comm, c_null_ptr, wait_s)
    if (st /= HIDET_NCCL_SUCCESS) return
    if (cudaMemcpy(c_loc(buf), dev, 16_c_size_t, cudaMemcpyDeviceToHost) /= 0) stop 'heal_loop: cudaMemcpy failed'
    step = nint(buf(1))
    total = buf(2)
    print '(a,i0,a,i0,a,i0)', 'heal_loop: rank ', rank, ': back at step ', step, ', from rank ', root
  end function
end program
