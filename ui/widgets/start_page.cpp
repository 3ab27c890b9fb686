#include "widgets/start_page.h"

#include <QFileInfo>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

#include "settings/settings.h"

namespace zkdv::ui {

namespace {
constexpr int kPathRole = Qt::UserRole + 1;
}

StartPage::StartPage(QWidget* parent) : QWidget(parent), recent_(new QListWidget(this))
{
    auto* title = new QLabel(tr("<h2>ZKDV Audit Workstation</h2>"
                                "<p>Check that a model was trained the way its trainer claims: open a case, or drop "
                                "verification tapes (*.zkdv) and sealed programs on this window to ingest them into a "
                                "new case.</p>"),
                             this);
    title->setWordWrap(true);
    auto* newCase = new QPushButton(tr("&New Case…"), this);
    auto* openCase = new QPushButton(tr("&Open Case…"), this);
    newCase->setToolTip(tr("Ctrl+N"));
    openCase->setToolTip(tr("Ctrl+O"));
    connect(newCase, &QPushButton::clicked, this, &StartPage::newCaseRequested);
    connect(openCase, &QPushButton::clicked, this, &StartPage::openCaseRequested);

    auto* recentLabel = new QLabel(tr("&Recent cases and tapes:"), this);
    recentLabel->setBuddy(recent_);
    recent_->setObjectName(QStringLiteral("recentFiles"));
    connect(recent_, &QListWidget::itemActivated, this, [this](QListWidgetItem* item) {
        Q_EMIT openRequested(item->data(kPathRole).toString());
    });

    auto* buttons = new QHBoxLayout;
    buttons->addWidget(newCase);
    buttons->addWidget(openCase);
    buttons->addStretch(1);
    auto* column = new QVBoxLayout;
    column->addWidget(title);
    column->addLayout(buttons);
    column->addSpacing(12);
    column->addWidget(recentLabel);
    column->addWidget(recent_, 1);
    // A readable column in the middle of a wide window, not lines across all of it.
    auto* centre = new QHBoxLayout(this);
    centre->addStretch(1);
    centre->addLayout(column, 4);
    centre->addStretch(1);
    refresh();
}

void StartPage::refresh()
{
    recent_->clear();
    for (const QString& path : Settings::recentFiles()) {
        auto* item = new QListWidgetItem(QStringLiteral("%1\n%2").arg(QFileInfo(path).fileName(), QFileInfo(path).absolutePath()), recent_);
        item->setData(kPathRole, path);
        item->setToolTip(path);
    }
    if (recent_->count() == 0) {
        auto* none = new QListWidgetItem(tr("No recent files yet."), recent_);
        none->setFlags(Qt::NoItemFlags);
    } else {
        recent_->setCurrentRow(0);
    }
}

}  // namespace zkdv::ui
