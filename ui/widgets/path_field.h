#pragma once
// A path typed or picked: a line edit with a "File…" and/or a "Folder…" button beside it,
// the pickers opening where `startFolder` says (the folder the auditor last picked from).

#include <QString>
#include <QWidget>

#include <functional>

class QLineEdit;

namespace zkdv::ui {

class PathField : public QWidget {
    Q_OBJECT
public:
    enum Picks { Files = 1, Folders = 2, FilesOrFolders = 3 };

    // `filter`: the file picker's name filter ("Commitments (*.json)").
    PathField(Picks picks, const QString& filter, std::function<QString()> startFolder, QWidget* parent = nullptr);

    QString path() const;  // trimmed
    void setPath(const QString& path);
    void setPlaceholderText(const QString& text);
    QLineEdit* edit() const { return edit_; }

Q_SIGNALS:
    void pathChanged(const QString& path);

private:
    QLineEdit* edit_;
    std::function<QString()> startFolder_;
};

}  // namespace zkdv::ui
