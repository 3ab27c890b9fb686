#pragma once
class Pane;
