#pragma once
// The line above the transaction table: which tape it shows, and who signed that tape in
// plain words ("Signed by trusted key 1a2b3c4d…", "Signed by an unknown key …", "Unsigned"),
// trust decided by the auditor's trainer keyring as the case overview decides it.

#include <QWidget>

class QLabel;

namespace zkdv::ui {

class TapeHeader : public QWidget {
    Q_OBJECT
public:
    explicit TapeHeader(QWidget* parent = nullptr);

    // Reads the tape from the case (read-only) and the keyring; tape 0 or an empty path clears.
    void showTape(const QString& casePath, qint64 tapeId);
    QString titleText() const { return title_; }  // whole, before eliding
    QString signatureText() const;

Q_SIGNALS:
    void problem(const QString& message);

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void elideTitle();

    QLabel* titleLabel_;
    QLabel* signature_;
    QString title_;
};

}  // namespace zkdv::ui
