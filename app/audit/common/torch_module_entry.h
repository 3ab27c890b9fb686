#pragma once
// The one symbol the zkdv-audit executable looks up in its libtorch module
// (zkdv-audit-torch): runs `command` ("demo" or "replay") on the process's argv, as a
// command of the executable would, and returns its exit code. It is plain C and throws
// nothing, because the module carries its own copy of zkdv and of every C++ type in it.

#define ZKDV_AUDIT_TORCH_ENTRY "zkdv_audit_torch_main"

extern "C" {

using ZkdvAuditTorchMain = int (*)(const char* command, int argc, char** argv);

__attribute__((visibility("default"))) int zkdv_audit_torch_main(const char* command, int argc, char** argv);

}
