# Feature checks for the calls that differ between Linux, macOS and the
# BSDs (core/src/base/sys.c and util.c use them). Sets:
#   HILOCK_PLATFORM_DEFS  HL_HAVE_* compile definitions for the core
#   HILOCK_UUID_LIB       what to link for libuuid (empty: it is in libc)
#   HILOCK_UUID_PC        " uuid" for hilock.pc's Requires.private, or ""
#   HILOCK_LD_VERSION_SCRIPT, HILOCK_LD_NO_UNDEFINED  the linker takes them
# With HILOCK_FORCE_PORTABLE no HL_HAVE_* is defined: every portable
# fallback is built, which is how a Linux build tests them.
include(CheckCSourceCompiles)
include(CheckIncludeFile)
include(CheckLinkerFlag)
include(CheckSymbolExists)

set(HILOCK_PLATFORM_DEFS "")
set(CMAKE_REQUIRED_DEFINITIONS -D_GNU_SOURCE)
set(CMAKE_REQUIRED_LIBRARIES ${CMAKE_THREAD_LIBS_INIT})
set(CMAKE_REQUIRED_QUIET ON)

macro(_hl_have var)
  if(${var})
    list(APPEND HILOCK_PLATFORM_DEFS ${var})
  endif()
endmacro()

if(HILOCK_FORCE_PORTABLE)
  message(STATUS "hilock: HILOCK_FORCE_PORTABLE: building every portable fallback")
else()
  check_include_file(sys/eventfd.h HL_HAVE_SYS_EVENTFD_H)
  if(HL_HAVE_SYS_EVENTFD_H)
    check_symbol_exists(eventfd sys/eventfd.h HL_HAVE_EVENTFD)
  endif()
  check_symbol_exists(pipe2 "fcntl.h;unistd.h" HL_HAVE_PIPE2)
  check_symbol_exists(SOCK_CLOEXEC sys/socket.h HL_HAVE_SOCK_CLOEXEC_FLAG)
  check_symbol_exists(SOCK_NONBLOCK sys/socket.h HL_HAVE_SOCK_NONBLOCK_FLAG)
  if(HL_HAVE_SOCK_CLOEXEC_FLAG AND HL_HAVE_SOCK_NONBLOCK_FLAG)
    set(HL_HAVE_SOCK_CLOEXEC ON)
  endif()
  check_symbol_exists(MSG_NOSIGNAL sys/socket.h HL_HAVE_MSG_NOSIGNAL)
  check_symbol_exists(SO_NOSIGPIPE sys/socket.h HL_HAVE_SO_NOSIGPIPE)
  check_include_file(sys/random.h HL_HAVE_SYS_RANDOM_H)
  if(HL_HAVE_SYS_RANDOM_H)
    check_symbol_exists(getrandom sys/random.h HL_HAVE_GETRANDOM)
  endif()
  check_symbol_exists(arc4random_buf stdlib.h HL_HAVE_ARC4RANDOM_BUF)
  check_symbol_exists(pthread_condattr_setclock pthread.h HL_HAVE_CONDATTR_SETCLOCK)
  check_symbol_exists(pthread_cond_timedwait_relative_np pthread.h
    HL_HAVE_COND_TIMEDWAIT_RELATIVE_NP)
  # pthread_setname_np has three spellings; pthread_set_name_np a fourth.
  check_include_file(pthread_np.h HL_HAVE_PTHREAD_NP_H)
  if(HL_HAVE_PTHREAD_NP_H)
    set(_hl_np "#include <pthread_np.h>\n")
  else()
    set(_hl_np "")
  endif()
  check_c_source_compiles("#include <pthread.h>\n${_hl_np}
    int main(void) { return pthread_setname_np(pthread_self(), \"x\"); }"
    HL_HAVE_PTHREAD_SETNAME_NP_2)
  if(NOT HL_HAVE_PTHREAD_SETNAME_NP_2)
    check_c_source_compiles("#include <pthread.h>\n${_hl_np}
      int main(void) { return pthread_setname_np(\"x\"); }"
      HL_HAVE_PTHREAD_SETNAME_NP_1)
  endif()
  if(NOT HL_HAVE_PTHREAD_SETNAME_NP_2 AND NOT HL_HAVE_PTHREAD_SETNAME_NP_1)
    check_c_source_compiles("#include <pthread.h>\n${_hl_np}
      int main(void) { return pthread_setname_np(pthread_self(), \"%s\", (void *)\"x\"); }"
      HL_HAVE_PTHREAD_SETNAME_NP_3)
    check_c_source_compiles("#include <pthread.h>\n${_hl_np}
      int main(void) { pthread_set_name_np(pthread_self(), \"x\"); return 0; }"
      HL_HAVE_PTHREAD_SET_NAME_NP)
  endif()
  foreach(_hl_var HL_HAVE_EVENTFD HL_HAVE_PIPE2 HL_HAVE_SOCK_CLOEXEC
      HL_HAVE_MSG_NOSIGNAL HL_HAVE_SO_NOSIGPIPE HL_HAVE_GETRANDOM
      HL_HAVE_ARC4RANDOM_BUF HL_HAVE_CONDATTR_SETCLOCK
      HL_HAVE_COND_TIMEDWAIT_RELATIVE_NP HL_HAVE_PTHREAD_NP_H
      HL_HAVE_PTHREAD_SETNAME_NP_2 HL_HAVE_PTHREAD_SETNAME_NP_1
      HL_HAVE_PTHREAD_SETNAME_NP_3 HL_HAVE_PTHREAD_SET_NAME_NP)
    _hl_have(${_hl_var})
  endforeach()
endif()
string(REPLACE ";" " " _hl_defs_msg "${HILOCK_PLATFORM_DEFS}")
message(STATUS "hilock platform features: ${_hl_defs_msg}")

# libuuid: its pkg-config module (Linux, the BSDs' e2fsprogs-libuuid), or
# the same functions in the C library (macOS).
pkg_check_modules(UUID IMPORTED_TARGET uuid)
if(UUID_FOUND)
  set(HILOCK_UUID_LIB PkgConfig::UUID)
  set(HILOCK_UUID_PC " uuid")
else()
  check_symbol_exists(uuid_generate_random uuid/uuid.h HL_HAVE_LIBC_UUID)
  if(NOT HL_HAVE_LIBC_UUID)
    message(FATAL_ERROR "libuuid not found: install uuid-dev (Debian), "
      "libuuid-devel (Fedora) or e2fsprogs-libuuid (FreeBSD)")
  endif()
  set(HILOCK_UUID_LIB "")
  set(HILOCK_UUID_PC "")
endif()

# The linker options of GNU ld, gold and lld; macOS's ld has neither.
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/hl_check.map" "{ global: main; local: *; };\n")
check_linker_flag(C "-Wl,--version-script=${CMAKE_CURRENT_BINARY_DIR}/hl_check.map"
  HILOCK_LD_VERSION_SCRIPT)
check_linker_flag(C "-Wl,--no-undefined" HILOCK_LD_NO_UNDEFINED)

unset(CMAKE_REQUIRED_DEFINITIONS)
unset(CMAKE_REQUIRED_LIBRARIES)
unset(CMAKE_REQUIRED_QUIET)
