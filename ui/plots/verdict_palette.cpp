#include "plots/verdict_palette.h"

#include <QWidget>

namespace zkdv::ui {

namespace {

QColor blend(const QColor& over, const QColor& under, double amount)
{
    return QColor::fromRgbF(static_cast<float>(over.redF() * amount + under.redF() * (1 - amount)),
                            static_cast<float>(over.greenF() * amount + under.greenF() * (1 - amount)),
                            static_cast<float>(over.blueF() * amount + under.blueF() * (1 - amount)));
}

bool isDark(const QColor& color) { return color.lightnessF() < 0.5; }

}  // namespace

QColor VerdictPalette::color(Verdict verdict)
{
    switch (verdict) {
    case Verdict::Exact:
        return QColor(0x2e, 0x9e, 0x44);
    case Verdict::WithinTolerance:
        return QColor(0xe8, 0xa2, 0x02);
    case Verdict::Diverged:
        return QColor(0xd6, 0x27, 0x28);
    case Verdict::Unverifiable:
        break;
    }
    return QColor(0x8c, 0x8c, 0x8c);
}

QColor VerdictPalette::cellBackground(Verdict verdict, const QPalette& palette)
{
    const QColor base = palette.color(QPalette::Base);
    return blend(color(verdict), base, isDark(base) ? 0.30 : 0.16);
}

QColor VerdictPalette::cellText(Verdict verdict, const QPalette& palette)
{
    const QColor base = palette.color(QPalette::Base);
    return isDark(base) ? color(verdict).lighter(140) : color(verdict).darker(165);
}

QColor VerdictPalette::printText(Verdict verdict) { return color(verdict).darker(165); }

void VerdictPalette::paintBanner(QWidget* banner, Verdict verdict)
{
    banner->setAutoFillBackground(true);
    QPalette colours = banner->palette();
    colours.setColor(QPalette::Window, cellBackground(verdict, colours));
    colours.setColor(QPalette::WindowText, cellText(verdict, colours));
    banner->setPalette(colours);
}

QString VerdictPalette::label(Verdict verdict)
{
    const std::string_view name = verdictName(verdict);
    return QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
}

}  // namespace zkdv::ui
