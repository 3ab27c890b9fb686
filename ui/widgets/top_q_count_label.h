#pragma once
// Says how many transactions "topq:q" replays for the q being chosen ("Replays 37 of 24,000
// transactions"), counted the way the replay chooses them (zkdv/audit/selection.h) on a
// thread of the pool: the tape's update norms are read once, each q is counted off the GUI
// thread, and only the newest q asked for is shown.

#include <QLabel>

#include <memory>
#include <optional>

namespace zkdv::ui {

class TopQCountLabel : public QLabel {
    Q_OBJECT

public:
    explicit TopQCountLabel(QWidget* parent = nullptr);
    ~TopQCountLabel() override;

    void setCase(const QString& casePath, qint64 tapeId);
    // Counts for `q` (the label says "Counting…" until it is known).
    void setQ(int q);
    int q() const { return q_; }
    // The count for q(), once known.
    std::optional<quint64> count() const { return count_; }

Q_SIGNALS:
    void counted(int q, quint64 count, quint64 transactionCount);

private:
    struct Shared;
    void start();
    void finished(int q, std::optional<quint64> count, quint64 transactions, const QString& problem);

    QString casePath_;
    qint64 tapeId_ = 0;
    int q_ = 0;
    bool running_ = false;
    std::optional<quint64> count_;
    std::shared_ptr<Shared> shared_;  // the update norms, read once per case and tape
};

}  // namespace zkdv::ui
