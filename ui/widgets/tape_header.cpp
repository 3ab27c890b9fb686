#include "widgets/tape_header.h"

#include <QColor>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>

#include "zkdv/store/case_store.h"
#include "zkdv/store/tape_seal.h"
#include "zkdv/util/trainer_keyring.h"
#include "zkdv/workflow/tape_summary_text.h"

namespace zkdv::ui {

TapeHeader::TapeHeader(QWidget* parent) : QWidget(parent), titleLabel_(new QLabel(this)), signature_(new QLabel(this))
{
    titleLabel_->setObjectName(QStringLiteral("tapeTitle"));
    signature_->setObjectName(QStringLiteral("tapeSignature"));
    titleLabel_->setTextFormat(Qt::PlainText);
    signature_->setTextFormat(Qt::PlainText);
    // The title gives way to the signature, which is short and must be read whole.
    titleLabel_->setMinimumWidth(0);
    titleLabel_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(4, 2, 4, 2);
    layout->addWidget(titleLabel_, 1);
    layout->addWidget(signature_);
}

QString TapeHeader::signatureText() const { return signature_->text(); }

void TapeHeader::showTape(const QString& casePath, qint64 tapeId)
{
    title_.clear();
    signature_->clear();
    signature_->setToolTip(QString());
    std::optional<CaseTape> tape;
    std::optional<TapeSealCheck> seal;
    if (!casePath.isEmpty() && tapeId != 0) {
        try {
            CaseStore store(casePath.toStdString(), CaseStore::Access::ReadOnly);
            tape = store.tape(tapeId);
            seal = checkTapeSeal(store.database(), tapeId, AuditorKey::existingPublicKey(), readTrustedKeys());
        } catch (const std::exception& error) {
            Q_EMIT problem(QString::fromStdString(error.what()));
        }
    }
    if (!tape) {
        elideTitle();
        return;
    }
    const QString path = QString::fromStdString(tape->path);
    title_ = tr("Tape %1 · %2").arg(tapeId).arg(QFileInfo(path).fileName());
    titleLabel_->setToolTip(path);
    // Trust in a signer is this auditor's: their trainer keyring, read as the tape is shown.
    TrainerKeyring keyring;
    QString keyringProblem;
    try {
        keyring = TrainerKeyring::load({});
    } catch (const std::exception& error) {
        keyringProblem = tr("\nThe trainer keyring could not be read, so no key is trusted: %1").arg(QString::fromStdString(error.what()));
    }
    const SignatureTrust trust = keyring.trustOf(tape->isSigned() ? std::optional<std::string>(tape->signerKeyId) : std::nullopt);
    signature_->setText(QString::fromStdString(zkdv::signatureText(trust, tape->signerKeyId)));
    const QColor colour = trust == SignatureTrust::Trusted      ? QColor(0x1b, 0x7a, 0x2e)
                          : trust == SignatureTrust::UnknownKey || trust == SignatureTrust::UnsignedExpected ? QColor(0xb0, 0x00, 0x20)
                                                                : palette().color(QPalette::PlaceholderText);
    signature_->setStyleSheet(QStringLiteral("color: %1").arg(colour.name()));
    signature_->setToolTip(tape->isSigned() ? tr("%1 key %2; trusted keys are those in %3")
                                                      .arg(QString::fromStdString(tape->signerAlgorithm), QString::fromStdString(tape->signerKeyId),
                                                           QString::fromStdString(TrainerKeyring::userFolder().string())) +
                                                  keyringProblem
                                            : tr("The tape carries no signature: who recorded it is not known") +
                                                  (trust == SignatureTrust::UnsignedExpected
                                                       ? tr("\nYour trainer keyring (%1) holds keys, so a signature was expected: one can be stripped")
                                                             .arg(QString::fromStdString(TrainerKeyring::userFolder().string()))
                                                       : QString()) +
                                                  keyringProblem);
    // A signer read from rows no seal this auditor trusts covers is no fact (zkdv/store/tape_seal.h).
    if (seal && !seal->vouched()) {
        signature_->setText(tr("signer not vouched for"));
        signature_->setStyleSheet(QStringLiteral("color: #b00020"));
        signature_->setToolTip(QString::fromStdString(seal->explanation));
    }
    elideTitle();
}

void TapeHeader::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    elideTitle();
}

void TapeHeader::elideTitle()
{
    titleLabel_->setText(titleLabel_->fontMetrics().elidedText(title_, Qt::ElideMiddle, titleLabel_->contentsRect().width()));
}

}  // namespace zkdv::ui
