#pragma once
class Window;
