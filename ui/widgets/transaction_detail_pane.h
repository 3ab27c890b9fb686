#pragma once
// The selected transaction in detail (Wireshark's packet details, in spirit): a tree of what
// the tape recorded for it (batch tensors, optimizer values, update fingerprints, sampled
// checks), what the shown replay run found (verdict, every comparison with its metrics),
// the auditor's flag and note, editable here; and, on demand, its deltas element by element
// (the transaction replayed once more in a worker, off the GUI thread, nothing stored) and
// where two differently configured replays of it part (Explain Divergence, in the same way).

#include <QDockWidget>
#include <QPointer>

#include <memory>
#include <optional>

class QComboBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QScrollArea;
class QTableWidget;
class QTimer;
class QTreeWidget;

namespace zkdv {
struct DivergenceExplanation;
struct ElementComparison;
struct TransactionDetail;
}

namespace zkdv::ui {

class BackgroundJob;
class DivergenceExplanationView;
class ElementDifferenceChart;
class JobProgressFrame;

class TransactionDetailPane : public QDockWidget {
    Q_OBJECT

public:
    explicit TransactionDetailPane(QWidget* parent = nullptr);
    ~TransactionDetailPane() override;

    // The case and tape the table shows; an empty path clears the pane.
    void setCase(const QString& casePath, qint64 tapeId);
    // Shows `index` with run `runId`'s results (0: the tape's newest run). Reading is
    // coalesced: a burst of selections (arrow keys held down) reads the case once.
    void showTransaction(quint64 index, qint64 runId);
    void clearTransaction();
    // Reads the shown transaction again now (after a replay stored results for it).
    void reload();

    std::optional<quint64> shownTransaction() const { return shown_; }
    QTreeWidget* tree() const { return tree_; }
    QComboBox* flagBox() const { return flag_; }
    QPlainTextEdit* noteEdit() const { return note_; }
    // Stores the flag and note being edited for the shown transaction; false (and problem())
    // when the case cannot take it now.
    bool saveNote();
    // The flag or note differs from what the case holds for the shown transaction.
    bool hasUnsavedNote() const;
    // Before the shown transaction goes (another row, another case, the window closing): an
    // unsaved note is saved; when that fails, the auditor chooses Save (again), Discard or
    // Cancel. True when it is safe to move on; false (Cancel) to stay where one is.
    bool settlePendingNote();
    QScrollArea* scrollArea() const { return scroll_; }

    // Where "Compare elements" replays ("cpu", "cuda:0").
    void setReplayDevice(const QString& device) { device_ = device; }
    // Replays the shown transaction in the background and shows its deltas element by
    // element; false when it cannot start (no deltas recorded, one running already).
    bool compareElements();
    BackgroundJob* elementJob() const { return job_; }
    QPushButton* compareButton() const { return compare_; }
    QComboBox* elementTensorBox() const { return elementTensor_; }
    ElementDifferenceChart* elementChart() const { return chart_; }
    QTableWidget* worstElementTable() const { return worst_; }
    // The last comparison shown (nullptr before one finished for the shown transaction).
    const ElementComparison* elementComparison() const { return comparison_.get(); }

    // "Explain Divergence…": asks for the two sides, then explainDivergence().
    QPushButton* explainButton() const { return explain_; }
    // Replays the shown transaction on the two sides of `devices` ("cpu,cpu@threads=2", as
    // zkdv-audit explain --devices) in the background and shows where they part in a dialog;
    // false when it cannot start (no transaction shown, sides that do not parse, one running).
    bool explainDivergence(const QString& devices);
    BackgroundJob* explainJob() const { return explainJob_; }
    // The last explanation, in its window (nullptr before one finished, or once its window closed).
    DivergenceExplanationView* explanationView() const;

Q_SIGNALS:
    // A note was stored for transaction `index`: the table re-reads its rows.
    void noteSaved(quint64 index);
    // "Compare elements" finished; ok false when it failed or was cancelled (message says why).
    void elementComparisonFinished(bool ok, const QString& message);
    // "Explain Divergence" finished, likewise.
    void divergenceExplained(bool ok, const QString& message);
    void problem(const QString& message);
    // Another transaction is shown: where its record's frame starts in `tapeFile` (empty when
    // the tape file could not be read: `why`), for the record bytes pane.
    void recordShown(const QString& tapeFile, quint64 frameOffset, const QString& caption, const QString& why);

private:
    void load();
    void fill(const TransactionDetail& detail);
    void showNote(const TransactionDetail& detail);
    void updateNoteButtons();
    void showElementTensor(int which);
    void clearElements(const QString& why);
    void askSidesAndExplain();

    QString casePath_;
    qint64 tapeId_ = 0;
    qint64 runId_ = 0;
    std::optional<quint64> pending_;
    std::optional<quint64> shown_;
    std::optional<quint64> noteShownFor_;  // the transaction whose note the editors hold
    QTimer* loadDelay_;
    QLabel* title_;
    QTreeWidget* tree_;
    QComboBox* flag_;
    QPlainTextEdit* note_;
    QPushButton* save_;
    QPushButton* revert_;
    QLabel* noteInfo_;
    QPushButton* compare_;
    QComboBox* elementTensor_;
    QLabel* elementInfo_;
    JobProgressFrame* progress_;
    ElementDifferenceChart* chart_;
    QTableWidget* worst_;
    QPointer<BackgroundJob> job_;
    QPushButton* explain_;
    JobProgressFrame* explainProgress_;
    QPointer<BackgroundJob> explainJob_;
    QPointer<DivergenceExplanationView> explanationView_;
    std::shared_ptr<ElementComparison> comparison_;
    bool shownHasDeltas_ = false;
    QString device_ = QStringLiteral("cpu");
    int savedFlag_ = 0;
    QString savedNote_;
    QString saveProblem_;  // why the last saveNote() failed
    QScrollArea* scroll_;
};

}  // namespace zkdv::ui
