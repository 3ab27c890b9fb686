#pragma once
// The built-in guide (F1): how an audit goes, what the verdicts mean, and every shortcut, read
// from the window's own actions so that the list is always the one the menus have.

#include <QDialog>

class QTextBrowser;

namespace zkdv::ui {

class HelpDialog : public QDialog {
    Q_OBJECT

public:
    // `actionsOf` is the window whose actions (menus, charts) the shortcut table lists.
    explicit HelpDialog(QWidget* actionsOf, QWidget* parent = nullptr);

    QString markdown() const { return markdown_; }

private:
    QString markdown_;
};

}  // namespace zkdv::ui
