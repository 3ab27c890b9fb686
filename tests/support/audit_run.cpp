#include "audit_run.h"

#include <QProcess>

namespace zkdv::test {

QString AuditRun::describe() const
{
    return QStringLiteral("exit %1%2\n--- stdout ---\n%3\n--- stderr ---\n%4")
        .arg(exitCode)
        .arg(crashed ? QStringLiteral(" (crashed or timed out)") : QString())
        .arg(out, err);
}

AuditRun runAuditCommand(const QStringList& arguments, const QProcessEnvironment& environment, int timeoutMs, const QString& workingDirectory)
{
    QProcess process;
    process.setProcessEnvironment(environment);
    if (!workingDirectory.isEmpty())
        process.setWorkingDirectory(workingDirectory);
    process.setProgram(QStringLiteral(ZKDV_AUDIT_EXECUTABLE));
    process.setArguments(arguments);
    process.start();
    AuditRun run;
    if (!process.waitForStarted(30000))
        return run;
    process.closeWriteChannel();
    const bool finished = process.waitForFinished(timeoutMs);
    run.out = QString::fromUtf8(process.readAllStandardOutput());
    run.err = QString::fromUtf8(process.readAllStandardError());
    if (!finished) {
        process.kill();
        process.waitForFinished();
        return run;
    }
    run.crashed = process.exitStatus() != QProcess::NormalExit;
    run.exitCode = process.exitCode();
    return run;
}

}  // namespace zkdv::test
