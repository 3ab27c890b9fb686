#include "dialogs/weight_match_dialog.h"

#include <QDialogButtonBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QRadioButton>
#include <QVBoxLayout>

#include "settings/settings.h"
#include "widgets/path_field.h"

namespace zkdv::ui {

WeightMatchDialog::WeightMatchDialog(QWidget* parent) : QDialog(parent)
{
    setObjectName(QStringLiteral("weightMatchDialog"));
    setWindowTitle(tr("Match Weights"));
    auto* layout = new QVBoxLayout(this);
    auto* hint = new QLabel(tr("The model's tensors are compared bit for bit with a state the current tape records, and each tensor that "
                               "differs, is missing or is extra is named. The outcome is kept in the case."),
                            this);
    hint->setWordWrap(true);
    layout->addWidget(hint);
    auto* form = new QFormLayout;
    model_ = new PathField(PathField::FilesOrFolders, tr("Safetensors (*.safetensors);;All files (*)"), &Settings::modelFolder, this);
    model_->setObjectName(QStringLiteral("model"));
    model_->setPlaceholderText(tr("model.safetensors, or a folder of shards"));
    form->addRow(tr("&Model:"), model_);
    start_ = new QRadioButton(tr("&Snapshot 0: a published starting checkpoint"), this);
    final_ = new QRadioButton(tr("&Final state: the shipped model"), this);
    final_->setChecked(true);
    form->addRow(tr("Against:"), start_);
    form->addRow(QString(), final_);
    layout->addLayout(form);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    QPushButton* ok = buttons->button(QDialogButtonBox::Ok);
    ok->setText(tr("Match"));
    ok->setEnabled(false);
    connect(model_, &PathField::pathChanged, ok, [ok](const QString& path) { ok->setEnabled(!path.isEmpty()); });
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    resize(560, sizeHint().height());
}

QString WeightMatchDialog::model() const { return model_->path(); }

ProvenanceKind WeightMatchDialog::kind() const { return start_->isChecked() ? ProvenanceKind::StartCheckpoint : ProvenanceKind::FinalModel; }

void WeightMatchDialog::accept()
{
    Settings::setModelFolder(QFileInfo(model()).absolutePath());
    QDialog::accept();
}

}  // namespace zkdv::ui
