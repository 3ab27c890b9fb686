#pragma once
// The one set of verdict colours: charts, the transaction table, the case panel and the
// reports all take theirs from here, derived from the desktop palette where they sit on it.

#include <QColor>
#include <QPalette>
#include <QString>

class QWidget;

#include "zkdv/audit/verdict.h"

namespace zkdv::ui {

class VerdictPalette {
public:
    // exact green, within-tolerance amber, diverged red, unverifiable grey: the hue of
    // markers, bars and lines.
    static QColor color(Verdict verdict);
    // A table cell: the hue washed into the palette's base colour, and text in the hue made
    // dark enough (light base) or light enough (dark base) to read on it.
    static QColor cellBackground(Verdict verdict, const QPalette& palette);
    static QColor cellText(Verdict verdict, const QPalette& palette);
    // Text on white paper (reports): the hue darkened to print legibly.
    static QColor printText(Verdict verdict);
    // A banner's frame and text in the verdict's colours (a finding, a warning).
    static void paintBanner(QWidget* banner, Verdict verdict);
    // "exact", "within-tolerance", ...: the case's spelling.
    static QString label(Verdict verdict);
};

}  // namespace zkdv::ui
