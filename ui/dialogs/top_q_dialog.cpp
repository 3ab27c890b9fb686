#include "dialogs/top_q_dialog.h"

#include <QDialogButtonBox>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>

#include "widgets/top_q_count_label.h"

namespace zkdv::ui {

TopQDialog::TopQDialog(const QString& casePath, qint64 tapeId, int q, QWidget* parent) : QDialog(parent)
{
    setObjectName(QStringLiteral("topQDialog"));
    setWindowTitle(tr("Replay Top-q"));
    auto* layout = new QVBoxLayout(this);
    auto* prompt = new QLabel(tr("Replay, for every parameter, the q transactions with the largest recorded update:"), this);
    prompt->setWordWrap(true);
    layout->addWidget(prompt);
    q_ = new QSpinBox(this);
    q_->setObjectName(QStringLiteral("topQ"));
    q_->setRange(1, 1000000);
    q_->setValue(q);
    layout->addWidget(q_);
    count_ = new TopQCountLabel(this);
    count_->setCase(casePath, tapeId);
    count_->setQ(q_->value());
    connect(q_, &QSpinBox::valueChanged, count_, &TopQCountLabel::setQ);
    layout->addWidget(count_);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
}

int TopQDialog::q() const { return q_->value(); }

QString TopQDialog::selectionSpec() const { return QStringLiteral("topq:%1").arg(q()); }

}  // namespace zkdv::ui
