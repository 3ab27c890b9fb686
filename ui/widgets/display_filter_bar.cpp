#include "widgets/display_filter_bar.h"

#include <QAbstractItemView>
#include <QComboBox>
#include <QCompleter>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QStringListModel>
#include <QStyle>
#include <QTimer>
#include <QVBoxLayout>

#include "widgets/wheel_guard.h"
#include "zkdv/store/display_filter.h"

namespace zkdv::ui {

namespace {

bool isWordCharacter(QChar c) { return c.isLetterOrNumber() || c == QLatin1Char('_'); }

// The word being typed (ending at the cursor) and where it starts.
struct TypedWord {
    qsizetype start = 0;
    QString text;
};

TypedWord wordBefore(const QString& text, qsizetype cursor)
{
    qsizetype start = cursor;
    while (start > 0 && isWordCharacter(text.at(start - 1)))
        --start;
    return {start, text.mid(start, cursor - start)};
}

// The identifier just before `position`, skipping blanks ("" when something else is there).
QString identifierBefore(const QString& text, qsizetype position)
{
    qsizetype end = position;
    while (end > 0 && text.at(end - 1).isSpace())
        --end;
    if (end == position)
        return {};  // no blank between it and the word typed: not a field before an operator
    qsizetype start = end;
    while (start > 0 && isWordCharacter(text.at(start - 1)))
        --start;
    return text.mid(start, end - start);
}

QStringList fieldNames()
{
    QStringList names;
    for (const DisplayFilterField& field : displayFilterFields())
        names << QString::fromUtf8(field.name);
    return names;
}

const char* const kNeutralTip = QT_TRANSLATE_NOOP("zkdv::ui::DisplayFilterBar",
                                                  "A transaction, a range A-B, text (verdict or tensor name), or a display filter such as "
                                                  "loss > 0.1 && verdict == diverged (F1, docs/display-filters.md)");

}  // namespace

DisplayFilterBar::DisplayFilterBar(QWidget* parent) : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    auto* row = new QHBoxLayout;
    quick_ = new QComboBox(this);
    quick_->setObjectName(QStringLiteral("quickFilter"));
    quick_->addItems({tr("All transactions"), tr("Diverged"), tr("Not replayed"), tr("With sampled checks"), tr("Top-q updates")});
    quick_->setToolTip(tr("Quick filter (Alt+0 … Alt+4)"));
    WheelGuard::guard(quick_);
    edit_ = new QLineEdit(this);
    edit_->setObjectName(QStringLiteral("textFilter"));
    edit_->setPlaceholderText(tr("Filter: transaction, range A-B, verdict, tensor, or loss > 0.1 && verdict == diverged (Ctrl+F)"));
    edit_->setClearButtonEnabled(true);
    edit_->setToolTip(tr(kNeutralTip));
    row->addWidget(quick_);
    row->addWidget(edit_, 1);
    layout->addLayout(row);
    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("filterStatus"));
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    status_->hide();
    layout->addWidget(status_);
    setFocusProxy(edit_);

    // Completion of the word under the cursor, not of the whole line (QLineEdit::setCompleter
    // would replace everything typed before it).
    words_ = new QStringListModel(this);
    completer_ = new QCompleter(words_, this);
    completer_->setWidget(edit_);
    completer_->setCaseSensitivity(Qt::CaseInsensitive);
    completer_->setCompletionMode(QCompleter::PopupCompletion);
    connect(completer_, qOverload<const QString&>(&QCompleter::activated), this, &DisplayFilterBar::insertCompletion);
    edit_->installEventFilter(this);

    delay_ = new QTimer(this);
    delay_->setSingleShot(true);
    delay_->setInterval(250);
    connect(edit_, &QLineEdit::textChanged, this, [this] {
        check();
        delay_->start();
    });
    connect(edit_, &QLineEdit::textEdited, this, &DisplayFilterBar::complete);
    connect(delay_, &QTimer::timeout, this, &DisplayFilterBar::applyDelayed);
    connect(quick_, &QComboBox::currentIndexChanged, this, &DisplayFilterBar::quickFilterChanged);
    check();
}

void DisplayFilterBar::focusFilter()
{
    edit_->setFocus();
    edit_->selectAll();
}

void DisplayFilterBar::check()
{
    const QString text = edit_->text();
    problem_.clear();
    if (text.trimmed().isEmpty()) {
        state_ = State::Empty;
    } else if (!looksLikeDisplayFilter(text.toStdString())) {
        state_ = State::PlainText;  // a search (a number, a range, a word): neutral, it cannot fail
    } else {
        try {
            compileDisplayFilter(text.toStdString());
            state_ = State::Valid;
        } catch (const DisplayFilterError& error) {
            state_ = State::Invalid;
            problem_ = QString::fromStdString(error.what());
        }
    }
    // Wireshark's colours: green compiles, red does not.
    QPalette palette;
    if (state_ == State::Valid || state_ == State::Invalid) {
        palette = edit_->style()->standardPalette();
        palette.setColor(QPalette::Base, state_ == State::Valid ? QColor(0xaf, 0xff, 0xaf) : QColor(0xff, 0xaf, 0xaf));
        palette.setColor(QPalette::Text, Qt::black);
    }
    edit_->setPalette(palette);
    edit_->setProperty("filterState", static_cast<int>(state_));
    edit_->setToolTip(state_ == State::Invalid ? problem_ : state_ == State::Valid ? tr("A valid display filter") : tr(kNeutralTip));
    status_->setText(problem_);
    status_->setVisible(state_ == State::Invalid);
}

void DisplayFilterBar::applyDelayed()
{
    // "filterError": the text the table was last refused (set with the status-bar message).
    edit_->setProperty("filterError", state_ == State::Invalid);
    if (state_ == State::Invalid) {
        Q_EMIT problemFound(problem_);
        return;  // the table keeps the rows of the last filter that compiled
    }
    Q_EMIT filterChanged(edit_->text());
}

void DisplayFilterBar::complete()
{
    const QString text = edit_->text();
    const TypedWord word = wordBefore(text, edit_->cursorPosition());
    if (text.left(word.start).count(QLatin1Char('"')) % 2 == 1) {
        completer_->popup()->hide();  // inside a quoted string: nothing to complete
        return;
    }
    // After a field name and a blank: the comparisons it takes; else, a field name.
    const QString field = identifierBefore(text, word.start);
    QStringList candidates;
    if (!field.isEmpty())
        for (const std::string& op : displayFilterComparisons(field.toStdString()))
            candidates << QString::fromStdString(op);
    const bool afterField = !candidates.isEmpty();
    if (!afterField)
        candidates = fieldNames();
    // "contains" is a word; the symbols are offered whole once the blank after the field is typed.
    const QString prefix = word.text;
    if (!afterField && prefix.isEmpty()) {
        completer_->popup()->hide();
        return;
    }
    // A word the field names already complete exactly needs no popup.
    if (!afterField && candidates.contains(prefix)) {
        completer_->popup()->hide();
        return;
    }
    words_->setStringList(candidates);
    completer_->setCompletionPrefix(prefix);
    if (completer_->completionCount() == 0) {
        completer_->popup()->hide();
        return;
    }
    completer_->popup()->setCurrentIndex(completer_->completionModel()->index(0, 0));
    completer_->complete();  // under the line edit
}

void DisplayFilterBar::insertCompletion(const QString& completion)
{
    QString text = edit_->text();
    const qsizetype cursor = edit_->cursorPosition();
    const TypedWord word = wordBefore(text, cursor);
    text.replace(word.start, cursor - word.start, completion + QLatin1Char(' '));
    edit_->setText(text);
    edit_->setCursorPosition(static_cast<int>(word.start + completion.size() + 1));
}

bool DisplayFilterBar::eventFilter(QObject* watched, QEvent* event)
{
    // While the popup is open, Return and Tab take the completion (QCompleter lets them
    // through to the line edit otherwise).
    if (watched == edit_ && event->type() == QEvent::KeyPress && completer_->popup()->isVisible()) {
        const int key = static_cast<QKeyEvent*>(event)->key();
        if (key == Qt::Key_Tab) {
            const QModelIndex current = completer_->popup()->currentIndex();
            if (current.isValid())
                insertCompletion(current.data().toString());
            completer_->popup()->hide();
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

}  // namespace zkdv::ui
