#pragma once
// How much text an image holds in an area: for the tests of exported chart images.

#include <QImage>
#include <QRect>

namespace zkdv::test {

// Pixels darker than mid-grey in `area` of `image`: text, on the light default palette.
inline int darkPixels(const QImage& image, const QRect& area)
{
    int dark = 0;
    for (int y = area.top(); y <= area.bottom(); ++y)
        for (int x = area.left(); x <= area.right(); ++x)
            dark += qGray(image.pixel(x, y)) < 100 ? 1 : 0;
    return dark;
}

}  // namespace zkdv::test
