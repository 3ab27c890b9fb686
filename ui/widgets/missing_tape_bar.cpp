#include "widgets/missing_tape_bar.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>

#include "plots/verdict_palette.h"

namespace zkdv::ui {

MissingTapeBar::MissingTapeBar(QWidget* parent) : QFrame(parent)
{
    setObjectName(QStringLiteral("missingTapeBar"));
    setFrameShape(QFrame::StyledPanel);
    VerdictPalette::paintBanner(this, Verdict::WithinTolerance);
    text_ = new QLabel(this);
    text_->setWordWrap(true);
    text_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* locate = new QPushButton(tr("Locate Tape…"), this);
    locate->setToolTip(tr("Point the case at the tape's new place; it must be the same tape (chain head and size) (Ctrl+L)"));
    auto* layout = new QHBoxLayout(this);
    layout->addWidget(text_, 1);
    layout->addWidget(locate);
    connect(locate, &QPushButton::clicked, this, [this] {
        if (!missing_.isEmpty())
            Q_EMIT locateRequested(missing_.front().tapeId);
    });
    hide();
}

void MissingTapeBar::showMissing(const QList<MovedTape>& missing)
{
    missing_ = missing;
    QStringList lines;
    for (const MovedTape& entry : missing)
        lines << entry.problem.toHtmlEscaped();
    text_->setText(tr("<b>Replays need the tape file; the case's results stay as they are.</b><br>") + lines.join(QStringLiteral("<br>")));
    setVisible(!missing.isEmpty());
}

bool MissingTapeBar::isMissing(qint64 tapeId) const
{
    for (const MovedTape& entry : missing_)
        if (entry.tapeId == tapeId)
            return true;
    return false;
}

QString MissingTapeBar::text() const { return text_->text(); }

}  // namespace zkdv::ui
