#include "ui_info.h"

#include <qcustomplot.h>

namespace zkdv::ui {

QString toolkitVersions()
{
    return QStringLiteral("Qt %1, QCustomPlot %2").arg(QString::fromLatin1(qVersion()), QStringLiteral(QCUSTOMPLOT_VERSION_STR));
}

}  // namespace zkdv::ui
