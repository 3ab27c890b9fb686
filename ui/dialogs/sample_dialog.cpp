#include "dialogs/sample_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QPushButton>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpressionValidator>
#include <QSpinBox>

#include <cmath>

#include <QDir>
#include <QFileInfo>

#include "widgets/path_field.h"

namespace zkdv::ui {

SampleDialog::SampleDialog(quint64 transactionCount, const QString& spec, QWidget* parent, const QString& calibration)
    : QDialog(parent), transactionCount_(transactionCount), proposedSeed_(drawAuditSeed()), unit_(new QComboBox(this)),
      count_(new QSpinBox(this)), percent_(new QDoubleSpinBox(this)), seed_(new QLineEdit(this)),
      stratified_(new QCheckBox(tr("Stratify by snapshot segment"), this)),
      calibration_(new PathField(PathField::Files, tr("Calibrations (*.json);;All files (*)"),
                                 [calibration] { return calibration.isEmpty() ? QDir::homePath() : QFileInfo(calibration).absolutePath(); }, this)),
      hint_(new QLabel(this))
{
    setWindowTitle(tr("Replay Random Sample"));
    unit_->addItems({tr("transactions"), tr("percent")});
    count_->setRange(1, 1000000000);
    count_->setValue(100);
    percent_->setRange(0.01, 100);
    percent_->setDecimals(2);
    percent_->setValue(5);
    seed_->setValidator(new QRegularExpressionValidator(QRegularExpression(QStringLiteral("[0-9]{1,20}")), seed_));
    seed_->setObjectName(QStringLiteral("seed"));
    seed_->setText(QString::number(proposedSeed_));
    seed_->setToolTip(tr("Drawn from the operating system when this dialog opened. Type another only to redo an audit."));
    hint_->setWordWrap(true);

    // Start from the last spec used.
    const QString kind = spec.section(QLatin1Char(':'), 0, 0), amount = spec.section(QLatin1Char(':'), 1);
    stratified_->setChecked(kind == QLatin1String("stratified"));
    if (amount.endsWith(QLatin1Char('%'))) {
        unit_->setCurrentIndex(1);
        percent_->setValue(amount.chopped(1).toDouble());
    } else if (amount.toULongLong() > 0) {
        count_->setValue(static_cast<int>(std::min<qulonglong>(amount.toULongLong(), 1000000000)));
    }

    auto* form = new QFormLayout(this);
    auto* amountRow = new QWidget(this);
    auto* amountLayout = new QHBoxLayout(amountRow);
    amountLayout->setContentsMargins(0, 0, 0, 0);
    amountLayout->addWidget(count_);
    amountLayout->addWidget(percent_);
    amountLayout->addWidget(unit_);
    form->addRow(tr("Sample:"), amountRow);
    form->addRow(tr("Seed:"), seed_);
    form->addRow(QString(), stratified_);
    calibration_->setObjectName(QStringLiteral("calibration"));
    calibration_->setPath(calibration);
    calibration_->setPlaceholderText(tr("none: the default envelope"));
    calibration_->setToolTip(tr("An envelope calibration (zkdv-audit calibrate) for replays in another numerical environment "
                                "than the training's; used only when it was measured for this pair of environments."));
    form->addRow(tr("Calibration:"), calibration_);
    form->addRow(hint_);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    replay_ = buttons->button(QDialogButtonBox::Ok);
    replay_->setText(tr("Replay"));
    form->addRow(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(count_, &QSpinBox::valueChanged, this, &SampleDialog::updateHint);
    connect(percent_, &QDoubleSpinBox::valueChanged, this, &SampleDialog::updateHint);
    connect(unit_, &QComboBox::currentIndexChanged, this, &SampleDialog::updateHint);
    connect(stratified_, &QCheckBox::toggled, this, &SampleDialog::updateHint);
    connect(seed_, &QLineEdit::textChanged, this, &SampleDialog::updateHint);
    updateHint();
}

QString SampleDialog::selectionSpec() const
{
    const QString kind = stratified_->isChecked() ? QStringLiteral("stratified") : QStringLiteral("random");
    if (unit_->currentIndex() == 1)
        return kind + QLatin1Char(':') + QString::number(percent_->value(), 'g', 6) + QLatin1Char('%');
    return kind + QLatin1Char(':') + QString::number(count_->value());
}

QString SampleDialog::calibrationPath() const { return calibration_->path(); }

quint64 SampleDialog::seed() const { return seed_->text().toULongLong(); }

SeedSource SampleDialog::seedSource() const { return seed() == proposedSeed_ ? SeedSource::Drawn : SeedSource::Given; }

void SampleDialog::updateHint()
{
    const bool percent = unit_->currentIndex() == 1;
    count_->setVisible(!percent);
    percent_->setVisible(percent);
    const double n = percent ? std::ceil(percent_->value() * static_cast<double>(transactionCount_) / 100.0)
                             : std::min<double>(count_->value(), static_cast<double>(transactionCount_));
    bool seedOk = false;
    (void)seed_->text().toULongLong(&seedOk);
    replay_->setEnabled(seedOk);
    const QString seedText = !seedOk ? tr("The seed must be a whole number from 0 to 18446744073709551615.")
                             : seedSource() == SeedSource::Drawn
                                 ? tr("The seed was drawn from the operating system just now, so nobody could know beforehand which "
                                      "transactions this audit checks.")
                                 : tr("You chose this seed: the report will say so, and its bound holds only if the trainer could not "
                                      "know it.");
    hint_->setText(tr("Replays %1 of %2 transactions chosen uniformly at random%3. The same sample and seed choose the same "
                      "transactions on every machine, so anyone can redo this audit. %4")
                       .arg(n)
                       .arg(transactionCount_)
                       .arg(stratified_->isChecked() ? tr(", spread over the snapshot segments in proportion to their size") : QString())
                       .arg(seedText));
}

}  // namespace zkdv::ui
