#include "ui_info.h"

#include <qcustomplot.h>

#include "zkdv/store/database.h"
#include "zkdv/tensor/torch_build.h"
#include "zkdv/version.h"
#include "zkdv/worker/replay_devices.h"

namespace zkdv::ui {

QString toolkitVersions()
{
    return QStringLiteral("Qt %1, QCustomPlot %2").arg(QString::fromLatin1(qVersion()), QStringLiteral(QCUSTOMPLOT_VERSION_STR));
}

QString aboutText()
{
    const std::vector<std::string> devices = replayDevices();
    QString cuda = cudaAvailable() ? QStringLiteral("available (CUDA %1, %2 device(s))").arg(QString::fromStdString(cudaVersion())).arg(cudaDeviceCount())
                                   : QStringLiteral("not available: replays run on the CPU");
    return QStringLiteral("<h3>ZKDV Audit Workstation %1</h3>"
                          "<p>Checks that a model was trained the way its trainer claims, by replaying transactions "
                          "of its verification tape.</p>"
                          "<table>"
                          "<tr><td>Qt</td><td>%2</td></tr>"
                          "<tr><td>QCustomPlot</td><td>%3</td></tr>"
                          "<tr><td>libtorch</td><td>%4</td></tr>"
                          "<tr><td>SQLite</td><td>%5</td></tr>"
                          "<tr><td>CUDA</td><td>%6</td></tr>"
                          "<tr><td>replay devices</td><td>%7</td></tr>"
                          "</table>")
        .arg(QString::fromLatin1(kVersion), QString::fromLatin1(qVersion()), QStringLiteral(QCUSTOMPLOT_VERSION_STR),
             QString::fromStdString(libtorchVersion()), QString::fromStdString(sqliteVersion()), cuda,
             QString::fromStdString([&] {
                 std::string list;
                 for (const std::string& d : devices)
                     list += (list.empty() ? "" : ", ") + d;
                 return list;
             }()));
}

}  // namespace zkdv::ui
