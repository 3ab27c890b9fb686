#pragma once
// zkdv-audit run to its end with its output captured: the command-line tests' one way of
// running the CLI and reading what it said.

#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

namespace zkdv::test {

struct AuditRun {
    int exitCode = -1;
    bool crashed = true;  // ended by a signal, never started, or killed at the time limit
    QString out;
    QString err;

    QString all() const { return out + err; }
    // "exit 1\n--- stdout ---\n…\n--- stderr ---\n…", for a failed assertion's message.
    QString describe() const;
};

// Runs this build's zkdv-audit with `arguments` in `environment` (and `workingDirectory`, when
// given), stdin closed, for at most `timeoutMs` (then it is killed and reported as crashed).
AuditRun runAuditCommand(const QStringList& arguments, const QProcessEnvironment& environment = QProcessEnvironment::systemEnvironment(),
                         int timeoutMs = 600000, const QString& workingDirectory = {});

}  // namespace zkdv::test
