! The few CUDA runtime calls the Fortran examples need, bound with iso_c_binding.
module cuda_runtime
  use, intrinsic :: iso_c_binding
  implicit none
  integer(c_int), parameter :: cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2
  interface
    integer(c_int) function cudaMalloc(ptr, bytes) bind(c, name="cudaMalloc")
      import
      type(c_ptr), intent(out) :: ptr
      integer(c_size_t), value :: bytes
    end function
    integer(c_int) function cudaFree(ptr) bind(c, name="cudaFree")
      import
      type(c_ptr), value :: ptr
    end function
    integer(c_int) function cudaMemcpy(dst, src, bytes, kind) bind(c, name="cudaMemcpy")
      import
      type(c_ptr), value :: dst, src
      integer(c_size_t), value :: bytes
      integer(c_int), value :: kind
    end function
    integer(c_int) function cudaDeviceSynchronize() bind(c, name="cudaDeviceSynchronize")
      import
    end function
  end interface
end module cuda_runtime
