#include "dialogs/help_dialog.h"

#include <QAction>
#include <QDialogButtonBox>
#include <QMenu>
#include <QMenuBar>
#include <QMainWindow>
#include <QTextBrowser>
#include <QVBoxLayout>

#include <set>

namespace zkdv::ui {

namespace {

QString guide()
{
    return QObject::tr(
        "# ZKDV Audit Workstation\n\n"
        "An audit checks that a model was trained the way its trainer claims, by replaying transactions "
        "(optimizer steps) of the trainer's verification tape and comparing the results with what the tape "
        "recorded.\n\n"
        "## An audit\n\n"
        "1. **Open or create a case** (Ctrl+O, Ctrl+N), or drop tapes (`*.zkdv`), sealed programs and folders of "
        "them on the window: they are ingested into the open case, or into a new case next to the first tape. "
        "Ingesting verifies the tape's hash chain and seal; a damaged tape is named with the record and byte where "
        "it breaks.\n"
        "2. **Pick transactions** in the table (filters: Alt+0 to Alt+4; the filter box, Ctrl+F, takes an index, a "
        "range `10-19`, text, or a display filter such as `loss > 0.1 && verdict == diverged` or "
        "`tensor contains \"fc\" || !replayed`) and **replay** them "
        "(Ctrl+R), a random sample (Ctrl+Shift+R) or the top-q largest updates (Ctrl+T) on the device in the "
        "toolbar. Esc cancels a replay.\n"
        "3. **Read the verdicts**: `exact` (bit for bit), `within-tolerance`, `diverged` (the tape does not "
        "reproduce: the training was not what it claims, or the replay differs), `unverifiable` (nothing could be "
        "compared, and why). The charts and the **Transaction Details** pane (Ctrl+Shift+D) follow the selected "
        "transaction: the pane shows what the tape recorded for it (batch tensors with their digests, optimizer "
        "values, update fingerprints, sampled deltas and state digest) and every comparison the shown run made, with "
        "its metrics. **Compare Elements** replays that one transaction once more (nothing is stored) and shows each "
        "recorded delta beside the replayed one: a heatmap of a 2-D tensor, values and a histogram of differences "
        "otherwise, and the elements that differ most.\n"
        "   There, flag a transaction (question, suspicious, confirmed) and write a note (Ctrl+Return saves): notes "
        "are stored in the case, shown in the table's Note column, selected by `flag == suspicious` or "
        "`note contains \"lr\"`, and printed in the report.\n"
        "4. **Export the report** (Ctrl+E) as PDF, HTML, JSON or CSV; the table as shown, as CSV (Ctrl+Shift+S in "
        "the table).\n\n"
        "## Replay runs\n\n"
        "Every replay is a run, listed under the case tree with its selection, seed, device, status and verdict "
        "counts. **All runs** (the default) shows, per transaction, the newest run that replayed it, marked "
        "`≠ runs disagree` when runs reached different verdicts: a later, smaller run never hides what an earlier "
        "one found. Pick a run to see only its results; the table, the charts and the report follow the run picked. "
        "A stopped run is *incomplete*: what it replayed stands, the rest was not checked. A report of one run still "
        "names what the tape's other runs found.\n\n"
        "## Refused and moved tapes\n\n"
        "A tape that cannot be ingested gets a banner with the whole finding (file, record, byte offset, what was "
        "expected and found); the case is unchanged, and a case made only for that tape is removed again. An "
        "incomplete tape's readable part can still be ingested (Ctrl+Shift+I), and the finding exported as a "
        "report (Ctrl+Shift+E). When a case opens and a tape file has moved, a bar says which: Locate Tape "
        "(Ctrl+L) points the case at the new place, once the file proves to be the same tape (chain head and "
        "size). A replay of a missing tape is refused before any run is recorded.\n\n"
        "## Charts\n\n"
        "The wheel zooms and a drag pans along the transactions; the value axis follows the data in view. "
        "Double-click the background or press Home to reset the zoom. Right-click a chart to export it as PNG or "
        "SVG, or its data as CSV.\n");
}

QString escaped(QString text)
{
    text.remove(QLatin1Char('&'));
    text.replace(QLatin1Char('|'), QStringLiteral("\\|"));
    return text;
}

void collect(const QList<QAction*>& actions, const QString& where, QStringList& rows, std::set<QString>& seen)
{
    for (QAction* action : actions) {
        if (action->menu()) {
            collect(action->menu()->actions(), escaped(action->menu()->title()), rows, seen);
            continue;
        }
        if (action->isSeparator() || action->shortcut().isEmpty())
            continue;
        const QString key = action->shortcut().toString(QKeySequence::NativeText);
        const QString row = QStringLiteral("| %1 | %2 | %3 |").arg(key, escaped(action->text()), where);
        if (seen.insert(row).second)
            rows << row;
    }
}

}  // namespace

HelpDialog::HelpDialog(QWidget* actionsOf, QWidget* parent) : QDialog(parent)
{
    setWindowTitle(tr("ZKDV Workstation Help"));
    QStringList rows;
    std::set<QString> seen;
    if (auto* window = qobject_cast<QMainWindow*>(actionsOf))
        collect(window->menuBar()->actions(), tr("menu"), rows, seen);
    // Actions of widgets inside the window (every chart has the same ones).
    for (QWidget* widget : actionsOf->findChildren<QWidget*>())
        if (!qobject_cast<QMenu*>(widget) && !qobject_cast<QMenuBar*>(widget))
            collect(widget->actions(), tr("chart or panel with the focus"), rows, seen);
    markdown_ = guide() + tr("\n## Shortcuts\n\n| Keys | Action | Where |\n| --- | --- | --- |\n") + rows.join(QLatin1Char('\n')) +
                QLatin1Char('\n');

    auto* browser = new QTextBrowser(this);
    browser->setObjectName(QStringLiteral("helpText"));
    browser->setMarkdown(markdown_);
    browser->setOpenExternalLinks(true);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(browser);
    layout->addWidget(buttons);
    resize(720, 640);
}

}  // namespace zkdv::ui
