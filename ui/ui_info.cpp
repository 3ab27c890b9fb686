#include "ui_info.h"

#include <qcustomplot.h>

#include "jobs/replay_worker_probe.h"
#include "zkdv/store/database.h"
#include "zkdv/version.h"

namespace zkdv::ui {

QString toolkitVersions()
{
    return QStringLiteral("Qt %1, QCustomPlot %2").arg(QString::fromLatin1(qVersion()), QStringLiteral(QCUSTOMPLOT_VERSION_STR));
}

QString aboutText(const ReplayWorkerProbe& worker)
{
    const QString asking = QStringLiteral("asking the replay worker…");
    QString libtorch = worker.libtorchVersion().toHtmlEscaped();
    QString cuda;
    if (!worker.answered()) {
        libtorch = cuda = asking;
    } else if (!worker.problem().isEmpty()) {
        libtorch = QStringLiteral("unknown: %1").arg(worker.problem().toHtmlEscaped());
        cuda = QStringLiteral("unknown: replays cannot run until the replay worker starts");
    } else {
        const int cudaDevices = static_cast<int>(worker.devices().size()) - 1;
        cuda = cudaDevices > 0 ? QStringLiteral("available (CUDA %1, %2 device(s))").arg(worker.cudaVersion().toHtmlEscaped()).arg(cudaDevices)
                               : QStringLiteral("not available: replays run on the CPU");
    }
    return QStringLiteral("<h3>ZKDV Audit Workstation %1</h3>"
                          "<p>Checks that a model was trained the way its trainer claims, by replaying transactions "
                          "of its verification tape.</p>"
                          "<table>"
                          "<tr><td>Qt</td><td>%2</td></tr>"
                          "<tr><td>QCustomPlot</td><td>%3</td></tr>"
                          "<tr><td>libtorch (replay worker)</td><td>%4</td></tr>"
                          "<tr><td>SQLite</td><td>%5</td></tr>"
                          "<tr><td>CUDA</td><td>%6</td></tr>"
                          "<tr><td>replay devices</td><td>%7</td></tr>"
                          "</table>")
        .arg(QString::fromLatin1(kVersion), QString::fromLatin1(qVersion()), QStringLiteral(QCUSTOMPLOT_VERSION_STR), libtorch,
             QString::fromStdString(sqliteVersion()), cuda, worker.devices().join(QStringLiteral(", ")).toHtmlEscaped());
}

}  // namespace zkdv::ui
