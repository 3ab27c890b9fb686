// zkdv-audit: the headless twin of the ZKDV workstation.

#include <cstdio>
#include <cstring>
#include <string>

#include "commands.h"
#include "torch_module.h"
#include "zkdv/version.h"

namespace {

constexpr const char* kUsage = R"(usage: zkdv-audit COMMAND [ARGS] [--help]

Checks that a model was trained the way its trainer claims, from the verification
tape ZKDV recorded around the training steps.

commands:
  verify TAPE                        check framing, hash chain, record order, seal and signature
  info TAPE|CASE                     describe a tape or an audit case
  ingest FILE|FOLDER... --case CASE  load tapes (and sealed program files) into a case
  replay CASE --select SPEC          re-execute chosen transactions and store verdicts
  calibrate CASE... --out FILE      measure the cross-environment envelope for this replay
                                     environment from honest tapes (replay --calibration FILE)
  plan CASE --select SPEC --seed S --shards N
                                     how a replay splits into shards for several machines
  merge CASE SHARD.zkaudit...        join the shard cases of a sharded replay (replay --shard
                                     I/N --into SHARD.zkaudit) into CASE as one run
  slurm-script CASE --select SPEC --seed S --shards N
                                     an sbatch array script of the shards and their merge
  kubernetes-job CASE --select SPEC --seed S --shards N --image IMG --claim PVC
                                     a Kubernetes Indexed Job replaying the shards
  explain CASE TX --devices A,B      replay one transaction on two sides (cpu, cuda:N,
                                     cpu@threads=N, cpu@kernels=host) and name the first
                                     operator whose outputs differ beyond rounding
  report CASE -o FILE                write the audit report of a replay (json, csv, pdf, html;
                                     --attest KEY: the signed verdict)
  demo --out FILE                    write an example tape from a small training run
  keygen --out KEY                   make a key for signing tapes or verdicts
  sign FILE --key KEY                write FILE.sig, a detached signature (OpenSSF model signing)
  verify-attestation FILE --trusted-key KEY
                                     check a signed verdict (report --attest)
  dataset commit FOLDER -o FILE      commit a dataset's files by one Merkle root
  dataset verify COMMIT [FOLDER]     check a dataset commitment, and a folder against it
  match-weights TAPE (--snapshot N | --final) MODEL
                                     compare a model's safetensors with a state on the tape

Run 'zkdv-audit COMMAND --help' for a command's options.
Exit status: 0 ok, 1 a check failed, 2 usage error or unreadable input.
)";

}  // namespace

int main(int argc, char** argv)
{
    using namespace zkdv::cli;
    if (argc < 2) {
        std::fputs(kUsage, stderr);
        return kExitUsage;
    }
    const std::string command = argv[1];
    if (command == "--help" || command == "-h" || command == "help") {
        std::fputs(kUsage, stdout);
        return kExitOk;
    }
    if (command == "--version") {
        std::printf("zkdv-audit %s\n", zkdv::kVersion);
        return kExitOk;
    }
    if (command == "verify")
        return runVerify(argc, argv);
    if (command == "info")
        return runInfo(argc, argv);
    if (command == "ingest")
        return runIngest(argc, argv);
    if (command == "report")
        return runReport(argc, argv);
    if (command == "plan")
        return runPlan(argc, argv);
    if (command == "merge")
        return runMerge(argc, argv);
    if (command == "slurm-script")
        return runSlurmScript(argc, argv);
    if (command == "kubernetes-job")
        return runKubernetesJob(argc, argv);
    if (command == "keygen")
        return runKeygen(argc, argv);
    if (command == "sign")
        return runSign(argc, argv);
    if (command == "verify-attestation")
        return runVerifyAttestation(argc, argv);
    if (command == "dataset")
        return runDataset(argc, argv);
    if (command == "match-weights")
        return runMatchWeights(argc, argv);
    if (command == "replay")
        return builtWithoutTorch() ? refuseWithoutTorch("replay") : runReplay(argc, argv);
    if (command == "explain")
        return builtWithoutTorch() ? refuseWithoutTorch("explain") : runExplain(argc, argv);
    if (command == "calibrate")
        return builtWithoutTorch() ? refuseWithoutTorch("calibrate") : runCalibrate(argc, argv);
    if (isTorchCommand(argv[1]))
        return runTorchCommand(argv[1], argc, argv);
    std::fprintf(stderr, "zkdv-audit: unknown command \"%s\"\n\n%s", command.c_str(), kUsage);
    return kExitUsage;
}
