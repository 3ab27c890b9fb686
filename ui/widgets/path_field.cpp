#include "widgets/path_field.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>

namespace zkdv::ui {

PathField::PathField(Picks picks, const QString& filter, std::function<QString()> startFolder, QWidget* parent)
    : QWidget(parent), edit_(new QLineEdit(this)), startFolder_(std::move(startFolder))
{
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(edit_, 1);
    connect(edit_, &QLineEdit::textChanged, this, [this] { Q_EMIT pathChanged(path()); });
    // The picker starts beside what is typed already, else where the auditor last picked.
    auto start = [this] {
        const QString typed = path();
        return typed.isEmpty() ? startFolder_() : QFileInfo(typed).absolutePath();
    };
    if (picks & Files) {
        auto* file = new QPushButton(tr("File…"), this);
        connect(file, &QPushButton::clicked, this, [this, filter, start] {
            const QString picked = QFileDialog::getOpenFileName(this, tr("Choose a File"), start(), filter);
            if (!picked.isEmpty())
                setPath(picked);
        });
        layout->addWidget(file);
    }
    if (picks & Folders) {
        auto* folder = new QPushButton(tr("Folder…"), this);
        connect(folder, &QPushButton::clicked, this, [this, start] {
            const QString picked = QFileDialog::getExistingDirectory(this, tr("Choose a Folder"), start());
            if (!picked.isEmpty())
                setPath(picked);
        });
        layout->addWidget(folder);
    }
}

QString PathField::path() const { return edit_->text().trimmed(); }

void PathField::setPath(const QString& path) { edit_->setText(QDir::toNativeSeparators(path)); }

void PathField::setPlaceholderText(const QString& text) { edit_->setPlaceholderText(text); }

}  // namespace zkdv::ui
