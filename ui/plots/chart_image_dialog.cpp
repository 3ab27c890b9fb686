#include "plots/chart_image_dialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>

namespace zkdv::ui {

ChartImageDialog::ChartImageDialog(const ChartImageOptions& proposed, QWidget* parent) : QDialog(parent), footer_(proposed.footer)
{
    setWindowTitle(tr("Export Chart as PNG"));
    const auto sideBox = [this](int value) {
        auto* box = new QSpinBox(this);
        box->setRange(ChartTools::kMinImageSide, ChartTools::kMaxImageSide);
        box->setSuffix(tr(" px"));
        box->setValue(value);
        return box;
    };
    width_ = sideBox(proposed.size.width());
    height_ = sideBox(proposed.size.height());
    width_->setObjectName(QStringLiteral("imageWidth"));
    height_->setObjectName(QStringLiteral("imageHeight"));
    title_ = new QLineEdit(proposed.title, this);
    title_->setObjectName(QStringLiteral("imageTitle"));
    title_->setPlaceholderText(tr("no title"));
    title_->setMinimumWidth(360);

    auto* size = new QHBoxLayout;
    size->addWidget(width_);
    size->addWidget(new QLabel(QStringLiteral("×"), this));
    size->addWidget(height_);
    size->addStretch();
    auto* form = new QFormLayout(this);
    form->addRow(tr("&Size:"), size);
    form->addRow(tr("&Title:"), title_);
    auto* hint = new QLabel(footer_.isEmpty() ? tr("The image has no footer: the chart shows no case.")
                                              : tr("Written under the chart:\n%1").arg(footer_),
                            this);
    hint->setObjectName(QStringLiteral("imageFooter"));
    hint->setWordWrap(true);
    hint->setTextInteractionFlags(Qt::TextSelectableByMouse);
    form->addRow(hint);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Export…"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    form->addRow(buttons);
}

ChartImageOptions ChartImageDialog::options() const
{
    return ChartImageOptions{QSize(width_->value(), height_->value()), title_->text().trimmed(), footer_};
}

}  // namespace zkdv::ui
