#include "widgets/message_log.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QDateTime>
#include <QListWidget>

namespace zkdv::ui {

namespace {
constexpr int kTextRole = Qt::UserRole + 1;
}

MessageLog::MessageLog(QWidget* parent) : QDockWidget(tr("Messages"), parent), list_(new QListWidget(this))
{
    setObjectName(QStringLiteral("messageLog"));  // saveState() restores it by name
    list_->setWordWrap(true);
    list_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    list_->setContextMenuPolicy(Qt::ActionsContextMenu);
    // Ctrl+C is the window's Edit > Copy, which copies from here when the log has the focus.
    auto* copy = new QAction(tr("&Copy"), list_);
    connect(copy, &QAction::triggered, this, &MessageLog::copySelection);
    auto* clearAll = new QAction(tr("C&lear Messages"), list_);
    clearAll->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Delete));
    clearAll->setShortcutContext(Qt::WidgetShortcut);
    connect(clearAll, &QAction::triggered, this, &MessageLog::clear);
    list_->addActions({copy, clearAll});
    setWidget(list_);
}

void MessageLog::copySelection()
{
    QStringList lines;
    for (QListWidgetItem* item : list_->selectedItems())
        lines << item->text();
    QApplication::clipboard()->setText(lines.join(QLatin1Char('\n')));
}

void MessageLog::append(const QString& message)
{
    if (message.trimmed().isEmpty())
        return;
    auto* item = new QListWidgetItem(QStringLiteral("%1  %2").arg(QTime::currentTime().toString(QStringLiteral("HH:mm:ss")), message));
    item->setData(kTextRole, message);
    item->setToolTip(message);
    list_->addItem(item);
    while (list_->count() > kMaxMessages)
        delete list_->takeItem(0);
    list_->scrollToBottom();
}

QStringList MessageLog::messages() const
{
    QStringList texts;
    for (int i = 0; i < list_->count(); ++i)
        texts << list_->item(i)->data(kTextRole).toString();
    return texts;
}

void MessageLog::clear() { list_->clear(); }

}  // namespace zkdv::ui
