#include "dialogs/dataset_check_dialog.h"

#include <QDialogButtonBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include "settings/settings.h"
#include "widgets/path_field.h"

namespace zkdv::ui {

DatasetCheckDialog::DatasetCheckDialog(QWidget* parent) : QDialog(parent)
{
    setObjectName(QStringLiteral("datasetCheckDialog"));
    setWindowTitle(tr("Check Dataset Commitment"));
    auto* layout = new QVBoxLayout(this);
    auto* hint = new QLabel(tr("The commitment's root is recomputed from its files' digests; given the data's folder, every file there "
                               "is hashed again and each one that changed, is missing or is extra is named. The outcome is kept in the case "
                               "for the current tape."),
                            this);
    hint->setWordWrap(true);
    layout->addWidget(hint);
    auto* form = new QFormLayout;
    commitment_ = new PathField(PathField::Files, tr("Dataset commitments (*.json);;All files (*)"), &Settings::datasetFolder, this);
    commitment_->setObjectName(QStringLiteral("commitment"));
    commitment_->setPlaceholderText(tr("data.commit.json"));
    form->addRow(tr("&Commitment:"), commitment_);
    folder_ = new PathField(PathField::Folders, QString(), [this] {
        return commitment().isEmpty() ? Settings::datasetFolder() : QFileInfo(commitment()).absolutePath();
    }, this);
    folder_->setObjectName(QStringLiteral("dataFolder"));
    folder_->setPlaceholderText(tr("optional: the data's folder"));
    form->addRow(tr("&Data:"), folder_);
    layout->addLayout(form);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    QPushButton* ok = buttons->button(QDialogButtonBox::Ok);
    ok->setText(tr("Check"));
    ok->setEnabled(false);
    connect(commitment_, &PathField::pathChanged, ok, [ok](const QString& path) { ok->setEnabled(!path.isEmpty()); });
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    resize(560, sizeHint().height());
}

QString DatasetCheckDialog::commitment() const { return commitment_->path(); }

QString DatasetCheckDialog::folder() const { return folder_->path(); }

void DatasetCheckDialog::accept()
{
    Settings::setDatasetFolder(QFileInfo(commitment()).absolutePath());
    QDialog::accept();
}

}  // namespace zkdv::ui
