! hidet_nccl: the Fortran module (iso_c_binding) over the C library, shipped as source since
! a .mod file is tied to one compiler. Build it with the program:
!   gfortran -c $PREFIX/include/hidet_nccl/fortran/hidet_nccl.f90
!   gfortran app.f90 hidet_nccl.o $(pkg-config --static --libs hidet_nccl)
! Every public C function is here under its C name, returning its status (HIDET_NCCL_SUCCESS
! is 0); device buffers and streams are type(c_ptr) (c_loc of a device array, or what
! cudaMalloc returned; c_null_ptr is the default stream); counts are integer(c_size_t).
! hidet_nccl_error_message() returns the calling thread's message as a Fortran string.
! MPI: link libhidet_nccl_mpi too, and pass `use mpi`'s communicator (or `use mpi_f08`'s
! comm%MPI_VAL) to hidet_nccl_mpi_comm_init_fortran. docs/fortran.md has a whole example.
module hidet_nccl
  use, intrinsic :: iso_c_binding
  implicit none

  ! hidet_nccl_status_t
  integer(c_int), parameter :: HIDET_NCCL_SUCCESS = 0, HIDET_NCCL_ERROR_INVALID_ARGUMENT = 1, &
    HIDET_NCCL_ERROR_INVALID_COMM = 2, HIDET_NCCL_ERROR_UNSUPPORTED = 3, HIDET_NCCL_ERROR_NCCL_NOT_FOUND = 4, &
    HIDET_NCCL_ERROR_NCCL = 5, HIDET_NCCL_ERROR_CUDA = 6, HIDET_NCCL_ERROR_TIMEOUT = 7, &
    HIDET_NCCL_ERROR_BOOTSTRAP = 8, HIDET_NCCL_ERROR_SYSTEM = 9, HIDET_NCCL_ERROR_INVALID_USAGE = 10
  ! hidet_nccl_dtype_t, with the Fortran kinds they match
  integer(c_int), parameter :: HIDET_NCCL_BOOL = 0, HIDET_NCCL_INT8 = 1, HIDET_NCCL_INT16 = 2, &
    HIDET_NCCL_INT32 = 3, HIDET_NCCL_INT64 = 4, HIDET_NCCL_UINT8 = 5, HIDET_NCCL_UINT16 = 6, &
    HIDET_NCCL_UINT32 = 7, HIDET_NCCL_UINT64 = 8, HIDET_NCCL_FLOAT16 = 9, HIDET_NCCL_BFLOAT16 = 10, &
    HIDET_NCCL_TFLOAT32 = 11, HIDET_NCCL_FLOAT32 = 12, HIDET_NCCL_FLOAT64 = 13, HIDET_NCCL_FLOAT8_E4M3 = 14, &
    HIDET_NCCL_FLOAT8_E5M2 = 15, HIDET_NCCL_COMPLEX64 = 16, HIDET_NCCL_COMPLEX128 = 17
  integer(c_int), parameter :: HIDET_NCCL_INTEGER4 = HIDET_NCCL_INT32, HIDET_NCCL_INTEGER8 = HIDET_NCCL_INT64, &
    HIDET_NCCL_REAL4 = HIDET_NCCL_FLOAT32, HIDET_NCCL_REAL8 = HIDET_NCCL_FLOAT64, &
    HIDET_NCCL_COMPLEX8 = HIDET_NCCL_COMPLEX64, HIDET_NCCL_COMPLEX16 = HIDET_NCCL_COMPLEX128
  ! hidet_nccl_op_t
  integer(c_int), parameter :: HIDET_NCCL_SUM = 0, HIDET_NCCL_PROD = 1, HIDET_NCCL_MAX = 2, HIDET_NCCL_MIN = 3, &
    HIDET_NCCL_AVG = 4
  ! error policies, devices, timeouts, split
  integer(c_int), parameter :: HIDET_NCCL_ON_ERROR_RETURN = 0, HIDET_NCCL_ON_ERROR_ABORT_COMM = 1, &
    HIDET_NCCL_ON_ERROR_ABORT_PROCESS = 2
  integer(c_int), parameter :: HIDET_NCCL_DEVICE_AUTO = -1, HIDET_NCCL_DEVICE_CURRENT = -2
  integer(c_int), parameter :: HIDET_NCCL_SPLIT_NOCOLOR = -1
  integer(c_int), parameter :: HIDET_NCCL_SHRINK_DEFAULT = 0, HIDET_NCCL_SHRINK_ABORT = 1
  ! library memory registrations
  integer(c_int), parameter :: HIDET_NCCL_REGISTER_AUTO = 0, HIDET_NCCL_REGISTER_BUFFER = 1, &
    HIDET_NCCL_REGISTER_WINDOW = 2, HIDET_NCCL_REGISTER_OWN = 3
  ! an NCCL knob of hidet_nccl_init_options_t left to NCCL
  integer(c_int), parameter :: HIDET_NCCL_UNSET = -huge(0_c_int) - 1
  real(c_double), parameter :: HIDET_NCCL_DEFAULT_TIMEOUT = 0.0_c_double

  ! ncclUniqueId: 128 opaque bytes
  type, bind(c) :: hidet_nccl_unique_id
    character(kind=c_char) :: internal(128)
  end type
  ! hidet_nccl_reduction_t
  type, bind(c) :: hidet_nccl_reduction
    integer(c_int) :: nccl_dtype, nccl_op
    integer(c_size_t) :: count_multiplier
    integer(c_int) :: min_nccl_version
  end type
  ! hidet_nccl_init_options_t: set size with c_sizeof (hidet_nccl_init_options() does)
  type, bind(c) :: hidet_nccl_init_options_t
    integer(c_size_t) :: size
    integer(c_int) :: device
    real(c_double) :: timeout_s
    integer(c_int) :: cta_policy, min_ctas, max_ctas  ! NCCL's knobs: HIDET_NCCL_UNSET leaves one to NCCL
    type(c_ptr) :: comm_name                          ! c_loc of a NUL-terminated string, or c_null_ptr
    integer(c_int) :: traffic_class, split_share
  end type

  interface
    type(c_ptr) function hidet_nccl_status_string(status) bind(c, name="hidet_nccl_status_string")
      import
      integer(c_int), value, intent(in) :: status
    end function
    type(c_ptr) function hidet_nccl_last_error() bind(c, name="hidet_nccl_last_error")
      import
    end function
    integer(c_size_t) function c_strlen(s) bind(c, name="strlen")
      import
      type(c_ptr), value, intent(in) :: s
    end function
    integer(c_int) function hidet_nccl_load() bind(c, name="hidet_nccl_load")
      import
    end function
    ! path: a C string (hidet_nccl_c_string)
    integer(c_int) function hidet_nccl_library_path(path) bind(c, name="hidet_nccl_library_path")
      import
      type(c_ptr), intent(out) :: path
    end function
    integer(c_int) function hidet_nccl_nccl_version(version_code) bind(c, name="hidet_nccl_nccl_version")
      import
      integer(c_int), intent(out) :: version_code
    end function
    integer(c_int) function hidet_nccl_dtype_name(dtype, name) bind(c, name="hidet_nccl_dtype_name")
      import
      integer(c_int), value, intent(in) :: dtype
      type(c_ptr), intent(out) :: name
    end function
    integer(c_int) function hidet_nccl_dtype_from_name(name, dtype) bind(c, name="hidet_nccl_dtype_from_name")
      import
      character(kind=c_char), dimension(*), intent(in) :: name
      integer(c_int), intent(out) :: dtype
    end function
    integer(c_int) function hidet_nccl_dtype_size(dtype, bytes) bind(c, name="hidet_nccl_dtype_size")
      import
      integer(c_int), value, intent(in) :: dtype
      integer(c_size_t), intent(out) :: bytes
    end function
    integer(c_int) function hidet_nccl_op_name(op, name) bind(c, name="hidet_nccl_op_name")
      import
      integer(c_int), value, intent(in) :: op
      type(c_ptr), intent(out) :: name
    end function
    integer(c_int) function hidet_nccl_op_from_name(name, op) bind(c, name="hidet_nccl_op_from_name")
      import
      character(kind=c_char), dimension(*), intent(in) :: name
      integer(c_int), intent(out) :: op
    end function
    integer(c_int) function hidet_nccl_reduction(dtype, op, out) bind(c, name="hidet_nccl_reduction")
      import
      integer(c_int), value, intent(in) :: dtype
      integer(c_int), value, intent(in) :: op
      type(hidet_nccl_reduction), intent(out) :: out
    end function
    integer(c_int) function hidet_nccl_setting(name, value, source) bind(c, name="hidet_nccl_setting")
      import
      character(kind=c_char), dimension(*), intent(in) :: name
      type(c_ptr), intent(out) :: value
      type(c_ptr), intent(out) :: source
    end function
    integer(c_int) function hidet_nccl_settings_reload() bind(c, name="hidet_nccl_settings_reload")
      import
    end function
    ! comms: an array of ncclComm_t
    integer(c_int) function hidet_nccl_set_comms(num_comms, comms) bind(c, name="hidet_nccl_set_comms")
      import
      integer(c_int), value, intent(in) :: num_comms
      type(c_ptr), dimension(*), intent(in) :: comms
    end function
    integer(c_int) function hidet_nccl_comm_adopt(comm, comm_id) bind(c, name="hidet_nccl_comm_adopt")
      import
      type(c_ptr), value, intent(in) :: comm
      integer(c_int), intent(out) :: comm_id
    end function
    integer(c_int) function hidet_nccl_comm_lookup(comm, comm_id) bind(c, name="hidet_nccl_comm_lookup")
      import
      type(c_ptr), value, intent(in) :: comm
      integer(c_int), intent(out) :: comm_id
    end function
    integer(c_int) function hidet_nccl_get_comm(idx, comm) bind(c, name="hidet_nccl_get_comm")
      import
      integer(c_int), value, intent(in) :: idx
      type(c_ptr), intent(out) :: comm
    end function
    integer(c_int) function hidet_nccl_comm_count(count) bind(c, name="hidet_nccl_comm_count")
      import
      integer(c_int), intent(out) :: count
    end function
    integer(c_int) function hidet_nccl_get_unique_id(id) bind(c, name="hidet_nccl_get_unique_id")
      import
      type(hidet_nccl_unique_id) :: id
    end function
    integer(c_int) function hidet_nccl_comm_init_rank(nranks, id, rank, comm_id) &
        bind(c, name="hidet_nccl_comm_init_rank")
      import
      integer(c_int), value, intent(in) :: nranks
      type(hidet_nccl_unique_id) :: id
      integer(c_int), value, intent(in) :: rank
      integer(c_int), intent(out) :: comm_id
    end function
    integer(c_int) function hidet_nccl_comm_init_all(ndev, devices, comm_ids) bind(c, name="hidet_nccl_comm_init_all")
      import
      integer(c_int), value, intent(in) :: ndev
      integer(c_int), dimension(*) :: devices
      integer(c_int), dimension(*) :: comm_ids
    end function
    integer(c_int) function hidet_nccl_comm_split(comm_id, color, key, new_id) bind(c, name="hidet_nccl_comm_split")
      import
      integer(c_int), value, intent(in) :: comm_id
      integer(c_int), value, intent(in) :: color
      integer(c_int), value, intent(in) :: key
      integer(c_int), intent(out) :: new_id
    end function
    integer(c_int) function hidet_nccl_comm_destroy(comm_id) bind(c, name="hidet_nccl_comm_destroy")
      import
      integer(c_int), value, intent(in) :: comm_id
    end function
    integer(c_int) function hidet_nccl_comm_rank(comm_id, rank) bind(c, name="hidet_nccl_comm_rank")
      import
      integer(c_int), value, intent(in) :: comm_id
      integer(c_int), intent(out) :: rank
    end function
    integer(c_int) function hidet_nccl_comm_size(comm_id, size) bind(c, name="hidet_nccl_comm_size")
      import
      integer(c_int), value, intent(in) :: comm_id
      integer(c_int), intent(out) :: size
    end function
    integer(c_int) function hidet_nccl_comm_device(comm_id, device) bind(c, name="hidet_nccl_comm_device")
      import
      integer(c_int), value, intent(in) :: comm_id
      integer(c_int), intent(out) :: device
    end function
    integer(c_int) function hidet_nccl_comm_is_owned(comm_id, owned) bind(c, name="hidet_nccl_comm_is_owned")
      import
      integer(c_int), value, intent(in) :: comm_id
      integer(c_int), intent(out) :: owned
    end function
    integer(c_int) function hidet_nccl_comm_set_error_policy(comm_id, policy) &
        bind(c, name="hidet_nccl_comm_set_error_policy")
      import
      integer(c_int), value, intent(in) :: comm_id
      integer(c_int), value, intent(in) :: policy
    end function
    integer(c_int) function hidet_nccl_comm_check(comm_id) bind(c, name="hidet_nccl_comm_check")
      import
      integer(c_int), value, intent(in) :: comm_id
    end function
    integer(c_int) function hidet_nccl_comm_wait(comm_id, stream, timeout_s) bind(c, name="hidet_nccl_comm_wait")
      import
      integer(c_int), value, intent(in) :: comm_id
      type(c_ptr), value, intent(in) :: stream
      real(c_double), value, intent(in) :: timeout_s
    end function
    integer(c_int) function hidet_nccl_comm_abort(comm_id) bind(c, name="hidet_nccl_comm_abort")
      import
      integer(c_int), value, intent(in) :: comm_id
    end function
    integer(c_int) function hidet_nccl_comm_shrink(comm_id, n_exclude, exclude_ranks, flags, new_id) &
        bind(c, name="hidet_nccl_comm_shrink")
      import
      integer(c_int), value, intent(in) :: comm_id
      integer(c_int), value, intent(in) :: n_exclude
      integer(c_int), dimension(*), intent(in) :: exclude_ranks
      integer(c_int), value, intent(in) :: flags
      integer(c_int), intent(out) :: new_id
    end function
    integer(c_int) function hidet_nccl_comm_recover(comm_id, timeout_s, new_id, n_lost) &
        bind(c, name="hidet_nccl_comm_recover")
      import
      integer(c_int), value, intent(in) :: comm_id
      real(c_double), value, intent(in) :: timeout_s
      integer(c_int), intent(out) :: new_id
      integer(c_int), intent(out) :: n_lost
    end function
    ! heal: the job whole again (restarted ranks taken back in); new_id is comm_id itself when
    ! nothing changed, else destroy comm_id
    integer(c_int) function hidet_nccl_comm_heal(comm_id, timeout_s, new_id, n_joined) &
        bind(c, name="hidet_nccl_comm_heal")
      import
      integer(c_int), value, intent(in) :: comm_id
      real(c_double), value, intent(in) :: timeout_s
      integer(c_int), intent(out) :: new_id
      integer(c_int), intent(out) :: n_joined
    end function
    ! joined(r + 1) = 1 for each rank r that the heal which made comm_id took in (size entries)
    integer(c_int) function hidet_nccl_comm_joined(comm_id, joined, n_joined) bind(c, name="hidet_nccl_comm_joined")
      import
      integer(c_int), value, intent(in) :: comm_id
      integer(c_int), dimension(*), intent(out) :: joined
      integer(c_int), intent(out) :: n_joined
    end function
    integer(c_int) function hidet_nccl_comm_revoke(comm_id) bind(c, name="hidet_nccl_comm_revoke")
      import
      integer(c_int), value, intent(in) :: comm_id
    end function
    ! library memory (ncclMemAlloc) and its registrations
    integer(c_int) function hidet_nccl_mem_alloc(comm_id, bytes, ptr) bind(c, name="hidet_nccl_mem_alloc")
      import
      integer(c_int), value, intent(in) :: comm_id
      integer(c_size_t), value, intent(in) :: bytes
      type(c_ptr), intent(out) :: ptr
    end function
    integer(c_int) function hidet_nccl_mem_free(ptr) bind(c, name="hidet_nccl_mem_free")
      import
      type(c_ptr), value, intent(in) :: ptr
    end function
    integer(c_int) function hidet_nccl_register(comm_id, ptr, bytes, flags, handle) bind(c, name="hidet_nccl_register")
      import
      integer(c_int), value, intent(in) :: comm_id
      type(c_ptr), value, intent(in) :: ptr
      integer(c_size_t), value, intent(in) :: bytes
      integer(c_int), value, intent(in) :: flags
      integer(c_int), intent(out) :: handle
    end function
    integer(c_int) function hidet_nccl_deregister(comm_id, handle) bind(c, name="hidet_nccl_deregister")
      import
      integer(c_int), value, intent(in) :: comm_id, handle
    end function
    ! how hidet_nccl_all_reduce would run this call ("own one-shot", "nccl plain", ..., then ": "
    ! and why) into route, a character(len=route_len) buffer, ending at c_null_char
    integer(c_int) function hidet_nccl_all_reduce_route(comm_id, sendbuff, recvbuff, count, dtype, op, route, &
        route_len) bind(c, name="hidet_nccl_all_reduce_route")
      import
      integer(c_int), value, intent(in) :: comm_id
      type(c_ptr), value, intent(in) :: sendbuff
      type(c_ptr), value, intent(in) :: recvbuff
      integer(c_size_t), value, intent(in) :: count
      integer(c_int), value, intent(in) :: dtype
      integer(c_int), value, intent(in) :: op
      character(kind=c_char), dimension(*), intent(out) :: route
      integer(c_size_t), value, intent(in) :: route_len
    end function
    ! the flight recorder: tag a NUL-terminated string (hidet_nccl_cstr; '' clears it)
    integer(c_int) function hidet_nccl_set_tag(tag) bind(c, name="hidet_nccl_set_tag")
      import
      character(kind=c_char), dimension(*), intent(in) :: tag
    end function
    ! dir: c_null_ptr ($HIDET_NCCL_TRACE_DIR) or c_loc of a NUL-terminated target string;
    ! path: c_null_ptr, or c_loc of a buffer of path_size characters for the file written
    integer(c_int) function hidet_nccl_trace_dump(dir, path, path_size) bind(c, name="hidet_nccl_trace_dump")
      import
      type(c_ptr), value, intent(in) :: dir
      type(c_ptr), value, intent(in) :: path
      integer(c_size_t), value, intent(in) :: path_size
    end function
    integer(c_int) function hidet_nccl_finalize() bind(c, name="hidet_nccl_finalize")
      import
    end function
    integer(c_int) function hidet_nccl_group_start() bind(c, name="hidet_nccl_group_start")
      import
    end function
    integer(c_int) function hidet_nccl_group_end() bind(c, name="hidet_nccl_group_end")
      import
    end function
    integer(c_int) function hidet_nccl_all_reduce(comm_id, sendbuff, recvbuff, count, dtype, op, stream) &
        bind(c, name="hidet_nccl_all_reduce")
      import
      integer(c_int), value, intent(in) :: comm_id
      type(c_ptr), value, intent(in) :: sendbuff
      type(c_ptr), value, intent(in) :: recvbuff
      integer(c_size_t), value, intent(in) :: count
      integer(c_int), value, intent(in) :: dtype
      integer(c_int), value, intent(in) :: op
      type(c_ptr), value, intent(in) :: stream
    end function
    integer(c_int) function hidet_nccl_broadcast(comm_id, sendbuff, recvbuff, count, dtype, root, stream) &
        bind(c, name="hidet_nccl_broadcast")
      import
      integer(c_int), value, intent(in) :: comm_id
      type(c_ptr), value, intent(in) :: sendbuff
      type(c_ptr), value, intent(in) :: recvbuff
      integer(c_size_t), value, intent(in) :: count
      integer(c_int), value, intent(in) :: dtype
      integer(c_int), value, intent(in) :: root
      type(c_ptr), value, intent(in) :: stream
    end function
    integer(c_int) function hidet_nccl_reduce(comm_id, sendbuff, recvbuff, count, dtype, op, root, stream) &
        bind(c, name="hidet_nccl_reduce")
      import
      integer(c_int), value, intent(in) :: comm_id
      type(c_ptr), value, intent(in) :: sendbuff
      type(c_ptr), value, intent(in) :: recvbuff
      integer(c_size_t), value, intent(in) :: count
      integer(c_int), value, intent(in) :: dtype
      integer(c_int), value, intent(in) :: op
      integer(c_int), value, intent(in) :: root
      type(c_ptr), value, intent(in) :: stream
    end function
    integer(c_int) function hidet_nccl_all_gather(comm_id, sendbuff, recvbuff, sendcount, dtype, stream) &
        bind(c, name="hidet_nccl_all_gather")
      import
      integer(c_int), value, intent(in) :: comm_id
      type(c_ptr), value, intent(in) :: sendbuff
      type(c_ptr), value, intent(in) :: recvbuff
      integer(c_size_t), value, intent(in) :: sendcount
      integer(c_int), value, intent(in) :: dtype
      type(c_ptr), value, intent(in) :: stream
    end function
    integer(c_int) function hidet_nccl_reduce_scatter(comm_id, sendbuff, recvbuff, recvcount, dtype, op, stream) &
        bind(c, name="hidet_nccl_reduce_scatter")
      import
      integer(c_int), value, intent(in) :: comm_id
      type(c_ptr), value, intent(in) :: sendbuff
      type(c_ptr), value, intent(in) :: recvbuff
      integer(c_size_t), value, intent(in) :: recvcount
      integer(c_int), value, intent(in) :: dtype
      integer(c_int), value, intent(in) :: op
      type(c_ptr), value, intent(in) :: stream
    end function
    integer(c_int) function hidet_nccl_all_to_all(comm_id, sendbuff, recvbuff, count, dtype, stream) &
        bind(c, name="hidet_nccl_all_to_all")
      import
      integer(c_int), value, intent(in) :: comm_id
      type(c_ptr), value, intent(in) :: sendbuff
      type(c_ptr), value, intent(in) :: recvbuff
      integer(c_size_t), value, intent(in) :: count
      integer(c_int), value, intent(in) :: dtype
      type(c_ptr), value, intent(in) :: stream
    end function
    integer(c_int) function hidet_nccl_gather(comm_id, sendbuff, recvbuff, count, dtype, root, stream) &
        bind(c, name="hidet_nccl_gather")
      import
      integer(c_int), value, intent(in) :: comm_id
      type(c_ptr), value, intent(in) :: sendbuff
      type(c_ptr), value, intent(in) :: recvbuff
      integer(c_size_t), value, intent(in) :: count
      integer(c_int), value, intent(in) :: dtype
      integer(c_int), value, intent(in) :: root
      type(c_ptr), value, intent(in) :: stream
    end function
    integer(c_int) function hidet_nccl_scatter(comm_id, sendbuff, recvbuff, count, dtype, root, stream) &
        bind(c, name="hidet_nccl_scatter")
      import
      integer(c_int), value, intent(in) :: comm_id
      type(c_ptr), value, intent(in) :: sendbuff
      type(c_ptr), value, intent(in) :: recvbuff
      integer(c_size_t), value, intent(in) :: count
      integer(c_int), value, intent(in) :: dtype
      integer(c_int), value, intent(in) :: root
      type(c_ptr), value, intent(in) :: stream
    end function
    integer(c_int) function hidet_nccl_send(comm_id, sendbuff, count, dtype, peer, stream) &
        bind(c, name="hidet_nccl_send")
      import
      integer(c_int), value, intent(in) :: comm_id
      type(c_ptr), value, intent(in) :: sendbuff
      integer(c_size_t), value, intent(in) :: count
      integer(c_int), value, intent(in) :: dtype
      integer(c_int), value, intent(in) :: peer
      type(c_ptr), value, intent(in) :: stream
    end function
    integer(c_int) function hidet_nccl_recv(comm_id, recvbuff, count, dtype, peer, stream) &
        bind(c, name="hidet_nccl_recv")
      import
      integer(c_int), value, intent(in) :: comm_id
      type(c_ptr), value, intent(in) :: recvbuff
      integer(c_size_t), value, intent(in) :: count
      integer(c_int), value, intent(in) :: dtype
      integer(c_int), value, intent(in) :: peer
      type(c_ptr), value, intent(in) :: stream
    end function
    integer(c_int) function hidet_nccl_barrier(comm_id, stream) bind(c, name="hidet_nccl_barrier")
      import
      integer(c_int), value, intent(in) :: comm_id
      type(c_ptr), value, intent(in) :: stream
    end function
    integer(c_int) function hidet_nccl_op_premul_sum(comm_id, dtype, scalar, scalar_on_device, op) &
        bind(c, name="hidet_nccl_op_premul_sum")
      import
      integer(c_int), value, intent(in) :: comm_id
      integer(c_int), value, intent(in) :: dtype
      type(c_ptr), value, intent(in) :: scalar
      integer(c_int), value, intent(in) :: scalar_on_device
      integer(c_int), intent(out) :: op
    end function
    integer(c_int) function hidet_nccl_op_destroy(comm_id, op) bind(c, name="hidet_nccl_op_destroy")
      import
      integer(c_int), value, intent(in) :: comm_id
      integer(c_int), value, intent(in) :: op
    end function
    integer(c_int) function hidet_nccl_init(comm_id) bind(c, name="hidet_nccl_init")
      import
      integer(c_int), intent(out) :: comm_id
    end function
    ! options: c_loc of a hidet_nccl_init_options, or c_null_ptr
    integer(c_int) function hidet_nccl_comm_init(bs, options, comm_id) bind(c, name="hidet_nccl_comm_init")
      import
      type(c_ptr), value, intent(in) :: bs
      type(c_ptr), value, intent(in) :: options
      integer(c_int), intent(out) :: comm_id
    end function
    integer(c_int) function hidet_nccl_bootstrap_create(ops, params, bs) bind(c, name="hidet_nccl_bootstrap_create")
      import
      type(c_ptr), value, intent(in) :: ops
      type(c_ptr), value, intent(in) :: params
      type(c_ptr), intent(out) :: bs
    end function
    integer(c_int) function hidet_nccl_bootstrap_create_v1(ops, params, bs) &
        bind(c, name="hidet_nccl_bootstrap_create_v1")
      import
      type(c_ptr), value, intent(in) :: ops
      type(c_ptr), value, intent(in) :: params
      type(c_ptr), intent(out) :: bs
    end function
    integer(c_int) function hidet_nccl_rendezvous_start(params, rv) bind(c, name="hidet_nccl_rendezvous_start")
      import
      type(c_ptr), value, intent(in) :: params
      type(c_ptr), intent(out) :: rv
    end function
    integer(c_int) function hidet_nccl_rendezvous_port(rv, port) bind(c, name="hidet_nccl_rendezvous_port")
      import
      type(c_ptr), value, intent(in) :: rv
      integer(c_int), intent(out) :: port
    end function
    integer(c_int) function hidet_nccl_rendezvous_live(rv, sessions) bind(c, name="hidet_nccl_rendezvous_live")
      import
      type(c_ptr), value, intent(in) :: rv
      integer(c_int), intent(out) :: sessions
    end function
    integer(c_int) function hidet_nccl_rendezvous_stop(rv) bind(c, name="hidet_nccl_rendezvous_stop")
      import
      type(c_ptr), value, intent(in) :: rv
    end function
    integer(c_int) function hidet_nccl_bootstrap_create_v2(ops, params, bs) &
        bind(c, name="hidet_nccl_bootstrap_create_v2")
      import
      type(c_ptr), value, intent(in) :: ops
      type(c_ptr), value, intent(in) :: params
      type(c_ptr), intent(out) :: bs
    end function
    integer(c_int) function hidet_nccl_bootstrap_recover(bs, timeout_s, kept, n_kept) &
        bind(c, name="hidet_nccl_bootstrap_recover")
      import
      type(c_ptr), value, intent(in) :: bs
      real(c_double), value, intent(in) :: timeout_s
      integer(c_int), dimension(*), intent(out) :: kept
      integer(c_int), intent(out) :: n_kept
    end function
    integer(c_int) function hidet_nccl_bootstrap_news(bs, recovering) bind(c, name="hidet_nccl_bootstrap_news")
      import
      type(c_ptr), value, intent(in) :: bs
      integer(c_int), intent(out) :: recovering
    end function
    integer(c_int) function hidet_nccl_bootstrap_joining(bs, joining) bind(c, name="hidet_nccl_bootstrap_joining")
      import
      type(c_ptr), value, intent(in) :: bs
      integer(c_int), intent(out) :: joining
    end function
    ! members, joined: one entry per rank of the job (the bootstrap's size when it was made)
    integer(c_int) function hidet_nccl_bootstrap_heal(bs, timeout_s, members, joined, n_members, n_joined) &
        bind(c, name="hidet_nccl_bootstrap_heal")
      import
      type(c_ptr), value, intent(in) :: bs
      real(c_double), value, intent(in) :: timeout_s
      integer(c_int), dimension(*), intent(out) :: members
      integer(c_int), dimension(*), intent(out) :: joined
      integer(c_int), intent(out) :: n_members
      integer(c_int), intent(out) :: n_joined
    end function
    integer(c_int) function hidet_nccl_bootstrap_load(path, params, bs) bind(c, name="hidet_nccl_bootstrap_load")
      import
      character(kind=c_char), dimension(*), intent(in) :: path
      type(c_ptr), value, intent(in) :: params
      type(c_ptr), intent(out) :: bs
    end function
    integer(c_int) function hidet_nccl_bootstrap_from_env(bs) bind(c, name="hidet_nccl_bootstrap_from_env")
      import
      type(c_ptr), intent(out) :: bs
    end function
    integer(c_int) function hidet_nccl_bootstrap_file(params, bs) bind(c, name="hidet_nccl_bootstrap_file")
      import
      type(c_ptr), value, intent(in) :: params
      type(c_ptr), intent(out) :: bs
    end function
    integer(c_int) function hidet_nccl_bootstrap_socket(params, bs) bind(c, name="hidet_nccl_bootstrap_socket")
      import
      type(c_ptr), value, intent(in) :: params
      type(c_ptr), intent(out) :: bs
    end function
    integer(c_int) function hidet_nccl_bootstrap_pmix(bs) bind(c, name="hidet_nccl_bootstrap_pmix")
      import
      type(c_ptr), intent(out) :: bs
    end function
    integer(c_int) function hidet_nccl_bootstrap_destroy(bs) bind(c, name="hidet_nccl_bootstrap_destroy")
      import
      type(c_ptr), value, intent(in) :: bs
    end function
    integer(c_int) function hidet_nccl_bootstrap_name(bs, name) bind(c, name="hidet_nccl_bootstrap_name")
      import
      type(c_ptr), value, intent(in) :: bs
      type(c_ptr), intent(out) :: name
    end function
    integer(c_int) function hidet_nccl_bootstrap_rank(bs, rank, size) bind(c, name="hidet_nccl_bootstrap_rank")
      import
      type(c_ptr), value, intent(in) :: bs
      integer(c_int), intent(out) :: rank
      integer(c_int), intent(out) :: size
    end function
    integer(c_int) function hidet_nccl_bootstrap_local_rank(bs, local_rank, local_size) &
        bind(c, name="hidet_nccl_bootstrap_local_rank")
      import
      type(c_ptr), value, intent(in) :: bs
      integer(c_int), intent(out) :: local_rank
      integer(c_int), intent(out) :: local_size
    end function
    integer(c_int) function hidet_nccl_bootstrap_broadcast(bs, buf, bytes, root, timeout_s) &
        bind(c, name="hidet_nccl_bootstrap_broadcast")
      import
      type(c_ptr), value, intent(in) :: bs
      type(c_ptr), value, intent(in) :: buf
      integer(c_size_t), value, intent(in) :: bytes
      integer(c_int), value, intent(in) :: root
      real(c_double), value, intent(in) :: timeout_s
    end function
    integer(c_int) function hidet_nccl_bootstrap_allgather(bs, send, recv, bytes, timeout_s) &
        bind(c, name="hidet_nccl_bootstrap_allgather")
      import
      type(c_ptr), value, intent(in) :: bs
      type(c_ptr), value, intent(in) :: send
      type(c_ptr), value, intent(in) :: recv
      integer(c_size_t), value, intent(in) :: bytes
      real(c_double), value, intent(in) :: timeout_s
    end function
    ! libhidet_nccl_mpi only
    integer(c_int) function hidet_nccl_mpi_init(comm_id) bind(c, name="hidet_nccl_mpi_init")
      import
      integer(c_int), intent(out) :: comm_id
    end function
    ! libhidet_nccl_mpi only: comm is a Fortran MPI handle
    integer(c_int) function hidet_nccl_mpi_comm_init_fortran(comm, options, comm_id) &
        bind(c, name="hidet_nccl_mpi_comm_init_fortran")
      import
      integer(c_int), value, intent(in) :: comm
      type(c_ptr), value, intent(in) :: options
      integer(c_int), intent(out) :: comm_id
    end function
  end interface

contains

  ! A C string (from hidet_nccl_last_error, hidet_nccl_dtype_name, ...) as a Fortran string.
  function hidet_nccl_c_string(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    if (.not. c_associated(p)) then
      s = ''
      return
    end if
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function

  ! The calling thread's message of the last failure ('' after a success).
  function hidet_nccl_error_message() result(s)
    character(len=:), allocatable :: s
    s = hidet_nccl_c_string(hidet_nccl_last_error())
  end function

  ! A Fortran string as a NUL-terminated one, for the functions that take a name.
  function hidet_nccl_cstr(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=len_trim(s) + 1) :: c
    c = trim(s) // c_null_char
  end function

  ! Options with their defaults (HIDET_NCCL_INIT_OPTIONS_INIT).
  function hidet_nccl_init_options() result(o)
    type(hidet_nccl_init_options_t) :: o
    o%size = c_sizeof(o)
    o%device = HIDET_NCCL_DEVICE_AUTO
    o%timeout_s = 0.0_c_double
    o%cta_policy = HIDET_NCCL_UNSET
    o%min_ctas = HIDET_NCCL_UNSET
    o%max_ctas = HIDET_NCCL_UNSET
    o%comm_name = c_null_ptr
    o%traffic_class = HIDET_NCCL_UNSET
    o%split_share = HIDET_NCCL_UNSET
  end function
end module hidet_nccl
